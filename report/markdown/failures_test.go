package markdown

import (
	"slices"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// The Failure type column names the generator short of its target (F4)
// only when it fell short on its own: after the storage filled, a
// generator held back by a system that stopped answering is the crash's
// consequence. A stall of delivery is named by the crash that explains it.
func TestFailingDetectors(t *testing.T) {
	t0 := time.Unix(1000, 0)
	det := func(name string, s int) pipebench.Detection {
		return pipebench.Detection{Detector: name, Began: t0.Add(time.Duration(s) * time.Second)}
	}
	for _, c := range []struct {
		name string
		ds   []pipebench.Detection
		want []string
		text string
	}{
		{"F2 then short", []pipebench.Detection{det("shortfall", 12), det("storage_full_all", 7), det("stall", 9)}, []string{"storage_full_all"}, "full storage (F2)"},
		{"short on its own", []pipebench.Detection{det("stall", 9), det("shortfall", 8)}, []string{"shortfall", "stall"}, "F4; stall"},
		{"short, then F1", []pipebench.Detection{det("shortfall", 3), det("storage_full_node", 7)}, []string{"shortfall", "storage_full_node"}, "F4; full storage (F1)"},
	} {
		r := &pipebench.Result{Detections: c.ds}
		if got := FailingDetectors(r); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if got := failures(r); got != c.text {
			t.Errorf("%s: column %q, want %q", c.name, got, c.text)
		}
	}
}
