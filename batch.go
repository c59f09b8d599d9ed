package pipebench

import "time"

// Header is one name/value pair a driver sends with a batch (an HTTP header,
// a gRPC metadata entry, a NATS header).
type Header struct {
	Name  string
	Value string
}

// Batch is what one send carries: Count items numbered Seq..Seq+Count-1,
// built by a Generator and sent by a Driver.
//
// A Batch is owned by the goroutine that sends it; a Driver must not keep a
// reference to Body or Data after Send returns.
type Batch struct {
	// Seq is the sequence number of the first item. Sequence numbers start
	// at 1 and increase by one per item across the whole run, so the sink
	// can tell loss, duplicates and reordering apart.
	Seq uint64
	// Count is the number of items carried (events, spans, points, records).
	Count int
	// Scheduled is when the pacer said this batch was due.
	Scheduled time.Time
	// Key is an optional routing key (a NATS subject suffix, a Kafka key).
	Key string
	// ContentType is the media type of Body, if Body is set.
	ContentType string
	// Headers are per-batch headers chosen by the generator (sequence
	// number, CloudEvents binary-mode attributes).
	Headers []Header
	// Body is the encoded payload, for drivers that send bytes.
	Body []byte
	// Data is a structured payload for drivers that know its type: the
	// OTLP traces generator hands over an already encoded request
	// (*otlp.Encoded), the metrics and logs generators pdata values.
	Data any
}

// Class is the outcome class of one send.
type Class uint8

// The outcome classes. Their String forms are the `errors{class}` labels.
const (
	ClassOK      Class = iota // accepted by the system under test
	ClassRefused              // refused: backpressure (429, 503, RESOURCE_EXHAUSTED) or a connection refused
	ClassTimeout              // no answer in time
	ClassError                // anything else: connection refused, protocol error, 4xx/5xx
	ClassDropped              // never started: held back at its due time, max_in_flight or max_in_flight_bytes answers outstanding
	numClasses
)

// NumClasses is the number of outcome classes, for arrays indexed by Class.
const NumClasses = int(numClasses)

var classNames = [...]string{"ok", "refused", "timeout", "error", "dropped"}

// String returns the class label: ok, refused, timeout, error, dropped.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// Outcome is the result of one Driver.Send: a measurement, never a Go error.
type Outcome struct {
	Class Class
	// Code is the protocol's status: an HTTP status, a gRPC code, 0 when
	// there was none (connection refused, timeout).
	Code int
	// Detail is a short reason for a failure ("connection refused",
	// "503 Service Unavailable"), empty on success. Keep it to a handful
	// of distinct strings: the recorder counts them.
	Detail string
	// Message is the failure's full text as the protocol library gave it
	// ("dial tcp 127.0.0.1:4317: connect: connection refused"). It may vary
	// from send to send: the recorder keeps only the first few distinct
	// ones of each class, for the Result's notes.
	Message string
	// Unreached is true when the send failed before the target answered
	// at all: the connection was refused, the address unreachable, the TLS
	// handshake or the protocol did not match. A run in which every send
	// is Unreached measured nothing of the system under test and is
	// invalid. A target that answers with an error (503, UNAVAILABLE) or
	// accepts the connection and never answers (a timeout) was reached.
	// Connection refused is ClassRefused with Unreached set.
	Unreached bool
	// Written is when the driver began writing the request, after any
	// wait for a free connection or a window slot; zero when the driver
	// does not tell. The recorder splits the send at it: the wait before
	// (KPI wait) and the service time after (service_time, write to
	// answer).
	Written time.Time
	// Answered is when the answer reached the generator's machine, by the
	// kernel's receive timestamp, when the driver can tell; zero
	// otherwise. The service time ends there, not when the generator got
	// round to reading it: the time an answer waited in the socket for a
	// busy generator is the generator's own (KPI read_lag), as its
	// lateness in starting a send is (schedule_lag).
	Answered time.Time
	// Unsent, when not OwnerNone, says that no part of the request left
	// pipebench, and whose limit kept it: OwnerSystem when the system
	// under test did not let it leave (every connection or window slot
	// stayed busy until the driver gave up waiting, a connect was refused
	// or not accepted in time), OwnerPipebench when pipebench itself could
	// not make it (its own limits: open files). Such a send is not counted
	// as sent: the system's share is held_back, pipebench's is missed.
	// Leave it OwnerNone when any of the request may have been written.
	Unsent Owner
}

// Owner says whose limit kept a due send from being made on time.
type Owner uint8

// The owners of a send not made.
const (
	OwnerNone      Owner = iota // the send was made (or the driver cannot tell)
	OwnerSystem                 // the system under test held it back: a result
	OwnerPipebench              // pipebench could not make it: the run is invalid when it matters
)

// String returns "system", "pipebench" or "".
func (o Owner) String() string {
	switch o {
	case OwnerSystem:
		return "system"
	case OwnerPipebench:
		return "pipebench"
	}
	return ""
}

// Sample is one send as the runner measured it.
type Sample struct {
	Scheduled time.Time // due time from the pacer
	Started   time.Time // when Send was called
	Ended     time.Time // when Send returned
	Count     int       // items in the batch
	Bytes     int       // encoded size, when known
	Outcome   Outcome
}
