// Package kafkae2e holds only tests: the Kafka plug-ins wired together as
// a run wires them (the embedded kafka SUT's broker, the kafka driver, the
// kafka sink attached by the SUT, the kafka observer) through a built-in
// scenario, with counts reconciled exactly between the generator and the
// sink and the backlog built and drained.
package kafkae2e
