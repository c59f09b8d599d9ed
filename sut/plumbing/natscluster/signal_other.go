//go:build !unix

package natscluster

import (
	"errors"
	"os"
	"syscall"
)

// noSignal is never delivered: lame duck mode by signal is Unix only.
type noSignal struct{}

func (noSignal) String() string { return "lame duck (unsupported)" }
func (noSignal) Signal()        {}

var lameDuckSignal os.Signal = noSignal{}

func signalPID(int, syscall.Signal) error {
	return errors.New("freezing a process is supported on Unix only")
}

func freezePID(int) error {
	return errors.New("freezing a process is supported on Unix only")
}

const (
	sigFreeze   = syscall.Signal(0x13)
	sigThaw     = syscall.Signal(0x12)
	sigLameDuck = syscall.Signal(0x1f)
)
