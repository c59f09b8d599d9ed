// Package natse2e holds only tests: the NATS plug-ins wired together as a
// run wires them (the jetstream SUT's child processes, the nats driver, the
// nats sink attached by the SUT, the nats observer), with counts reconciled
// exactly between the driver, the server's stream and the sink.
package natse2e
