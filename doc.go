// Package pipebench holds the domain types and plug-in interfaces of pipebench:
// what a run is made of (Plan, Batch, Outcome, Point, Result) and the seams
// that protocols plug into (Generator, Driver, Sink, Observer, Reporter,
// Store, SUT).
//
// This package imports the standard library only. Every implementation lives
// in its own folder (driver/http, sink/http, observer/prometheus, ...) and is
// wired into a Registry in cmd/pipebench, so the list of valid names in a
// scenario always comes from that one registry.
//
// The flow of one run:
//
//	scenario.yaml -> Scenario -> Plan -> Runner
//	  Pacer -> Generator.Next -> Driver.Send -> Sample -> recorder
//	  Sink   -> Arrivals (seq matching, e2e latency, duplicates, loss)
//	  Observer.Observe -> Points -> Series
//	-> Result -> thresholds, detectors -> Reporters, Store
package pipebench
