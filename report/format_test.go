package report

import (
	"testing"

	"github.com/pipebench/pipebench"
)

// Units format as they read, and a last reading standing in for a phase
// without one says so.
func TestValueUnitsAndLastReading(t *testing.T) {
	for _, c := range []struct {
		k    pipebench.KPI
		want string
	}{
		{pipebench.KPI{Value: 10.24, Unit: pipebench.UnitMBPerSecond}, "10.2 MB/s"},
		{pipebench.KPI{Value: 2500, Unit: pipebench.UnitPerSecond}, "2,500/s"},
		{pipebench.KPI{Value: 2500, Unit: pipebench.UnitPerSecond, LastReading: true}, "2,500/s (last)"},
		{pipebench.KPI{Value: 3, LastReading: true}, "3 (last)"},
	} {
		if got := Value(c.k); got != c.want {
			t.Errorf("Value(%+v) = %q, want %q", c.k, got, c.want)
		}
	}
}
