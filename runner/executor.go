package runner

import (
	"context"
	"sync"

	"github.com/pipebench/pipebench"
)

// executor runs the sends of one phase: paced.go (open model, sends due on
// schedule) and blast.go (closed model, workers as fast as they go). Sends
// it starts are added to wg; execute returns when the phase is over, not
// when its sends have all returned.
type executor interface {
	execute(ctx, sendCtx context.Context, r *run, i int, wg *sync.WaitGroup)
}

// executorFor chooses the executor of a phase.
func executorFor(ph pipebench.PlanPhase) executor {
	if ph.Blast() {
		return blast{}
	}
	return paced{}
}
