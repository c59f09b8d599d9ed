package loglines

import (
	"testing"

	"github.com/pipebench/pipebench"
)

// Log lines are log lines and bytes: the logfile and http drivers send them.
func TestFactoryDeclaresLogLinesAndBytes(t *testing.T) {
	f := Factory()
	if !pipebench.Fits(f.Produces, []pipebench.Payload{pipebench.PayloadLogLines}) || !pipebench.Fits(f.Produces, []pipebench.Payload{pipebench.PayloadBytes}) ||
		pipebench.Fits(f.Produces, []pipebench.Payload{pipebench.PayloadOTLPLogs}) {
		t.Errorf("loglines produces %v", f.Produces)
	}
}
