package payload_test

import (
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/jsonsplit"
	"github.com/pipebench/pipebench/payload"
)

// The events the generator records for a batch are the ones a scan of its
// body finds (jsonsplit.Array), slice for slice, in every event shape; a
// batch it did not make as an array of events (one event, CloudEvents, a
// body changed after it was made, another generator's) has none.
func TestItemsAreTheArraysElements(t *testing.T) {
	f := payload.EventFactory()
	for _, tc := range []struct {
		name string
		set  func(c *payload.EventConfig)
	}{
		{"seq in headers", func(c *payload.EventConfig) {}},
		{"seq in the body", func(c *payload.EventConfig) { c.SeqIn = "field" }},
		{"fields with quotes and commas", func(c *payload.EventConfig) {
			c.Fields = map[string]string{"a": `x,"]}`, "node": "n-{{seq % 3}}"}
		}},
		{"no padding", func(c *payload.EventConfig) { c.Size = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.NewConfig().(*payload.EventConfig)
			tc.set(cfg)
			g, err := f.New(cfg, pipebench.Env{})
			if err != nil {
				t.Fatal(err)
			}
			rel := g.(pipebench.Releaser)
			for _, count := range []int{2, 3, 1000, 7, 2} { // pooled buffers reused
				b := g.Next(uint64(count*10), count, time.Now())
				items := payload.Items(&b, nil)
				want := jsonsplit.Array(b.Body, count, nil)
				if len(items) != count || len(want) != count {
					t.Fatalf("%d events: Items gave %d, the scan %d", count, len(items), len(want))
				}
				for i := range items {
					if &items[i][0] != &want[i][0] || len(items[i]) != len(want[i]) {
						t.Fatalf("%d events: event %d is %q, the scan's %q", count, i, items[i], want[i])
					}
				}
				rel.Release(&b)
			}
			one := g.Next(1, 1, time.Now())
			if items := payload.Items(&one, nil); items != nil {
				t.Errorf("a batch of one event: %q", items)
			}
			two := g.Next(1, 2, time.Now())
			copied := two
			copied.Body = append([]byte(nil), two.Body...)
			if items := payload.Items(&copied, nil); items != nil {
				t.Errorf("a body that is not the generator's: %q", items)
			}
		})
	}
	ce := payload.CloudEventsFactory()
	g, err := ce.New(ce.NewConfig(), pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	b := g.Next(1, 3, time.Now())
	if items := payload.Items(&b, nil); items != nil {
		t.Errorf("a CloudEvents batch: %q", items)
	}
}
