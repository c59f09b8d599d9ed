package pipebench

// What pipebench's own numbers mean, said once: the help text of run, the
// documentation (docs/numbers.md), the descriptions of the Prometheus and
// OTLP series and the HTML report quote these words, and a test holds them
// to it.
const (
	// MeaningLatency is what the latency KPI and series measure.
	MeaningLatency = "latency counts from each send's scheduled time to its answer: pipebench's own lateness in starting it (schedule_lag), its wait for a free connection or window slot (wait) and the service, from the write of the request to the answer's arrival (service_time), each also reported on its own; corrected for coordinated omission, as wrk2 counts; a send never sent has no latency"
	// MeaningSent is what sent, held_back and missed count.
	MeaningSent = "sent counts the items whose request left pipebench; held_back counts the items the system under test did not let it send on time (max_in_flight answers outstanding, no free connection or window slot, a connect refused), a result about the system; missed counts those pipebench itself did not make, which makes the run invalid above 1% of the plan; the target is sent plus held_back plus missed"
)
