package payload

import (
	"slices"
	"testing"

	"github.com/pipebench/pipebench"
)

// The byte generators declare that they produce bytes.
func TestFactoriesDeclareBytes(t *testing.T) {
	for _, f := range []pipebench.Factory[pipebench.Generator]{EventFactory(), CloudEventsFactory()} {
		if !slices.Equal(f.Produces, []pipebench.Payload{pipebench.PayloadBytes}) || f.Accepts != nil {
			t.Errorf("%s produces %v, accepts %v", f.Name, f.Produces, f.Accepts)
		}
	}
}
