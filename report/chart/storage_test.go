package chart

import (
	"testing"
	"time"

	"github.com/pipebench/pipebench"
)

// Each node's storage against its limit is one line of the storage chart:
// the picture of the eventing reference's F1 and F2 screenshots.
func TestStoragePerNode(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &pipebench.Result{Manifest: pipebench.Manifest{Started: t0}}
	for _, node := range []string{"nats-0", "nats-1", "nats-2"} {
		r.Series = append(r.Series, pipebench.Series{Name: "node_storage_used_ratio", Labels: map[string]string{"instance": node},
			Points: []pipebench.TimeValue{{T: t0.Add(time.Second), V: 0.1}, {T: t0.Add(2 * time.Second), V: 0.5}}})
	}
	for _, c := range Build(r) {
		if c.ID == "storage" {
			if len(c.Lines) != 3 || c.Lines[0].Y[1] != 0.5 {
				t.Errorf("storage chart %+v", c)
			}
			return
		}
	}
	t.Fatal("no storage chart")
}
