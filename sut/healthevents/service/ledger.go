package service

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/pipebench/pipebench"
)

var _ pipebench.LedgerReporter = (*Server)(nil)

// Ledger implements pipebench.LedgerReporter: what the service holds of
// the events it accepted, in events. In the connector's queue: received,
// not yet stored (its own count). Stored and not yet cordoned: at the
// last observation the store's own count of the documents whose
// healtheventstatus.nodequarantined is still unset (the fault-quarantine
// module's mark), before it the service's count (cheap: it is asked
// every interval); then what took effect (its applied count). What it gave up on (a write failed three times, a
// cordon or its update failed) is what it dropped.
func (s *Server) Ledger(ctx context.Context, at time.Time, last bool) ([]pipebench.Point, error) {
	held := func(where string, v float64) pipebench.Point {
		return pipebench.Point{Name: pipebench.LedgerHeld, Labels: map[string]string{"where": where}, Kind: pipebench.KindGauge, At: at, Value: v}
	}
	pts := []pipebench.Point{held("connector queue (received, not yet stored)", float64(s.queued.Load()))}
	const stored = "store (stored, not yet cordoned)"
	var err error
	switch {
	case last && s.store != nil:
		var n int64
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		n, err = s.store.notQuarantined(cctx)
		cancel()
		if err != nil {
			pts = append(pts, pipebench.Point{Name: pipebench.LedgerUnknown, Labels: map[string]string{"term": "held", "where": stored,
				"because": fmt.Sprintf("the store did not count its documents not yet cordoned: %v", err)}, Kind: pipebench.KindGauge, At: at, Value: 1})
			break
		}
		pts = append(pts, held(stored, float64(n)))
	default:
		pts = append(pts, held(stored, float64(s.backlog.Load())))
	}
	// What took effect, read after the store's count: an event cordoned
	// in between counts in both (and pending is at most what is
	// missing), never in neither.
	pts = append(pts, pipebench.Point{Name: pipebench.LedgerEffected, Labels: map[string]string{"where": "quarantine stage (effects applied)"}, Kind: pipebench.KindGauge, At: at, Value: counterValue(s.applied)})
	var dropped float64
	for _, stage := range []string{"store", "quarantine"} {
		if c, e := s.failed.GetMetricWithLabelValues(stage); e == nil {
			dropped += counterValue(c)
		}
	}
	pts = append(pts, pipebench.Point{Name: pipebench.LedgerDropped, Labels: map[string]string{"where": "given up (events failed)"}, Kind: pipebench.KindGauge, At: at, Value: dropped})
	return pts, err
}

// notQuarantined counts the documents the quarantine stage has not marked.
func (st *store) notQuarantined(ctx context.Context) (int64, error) {
	return st.coll.CountDocuments(ctx, bson.D{{Key: "healtheventstatus.nodequarantined", Value: nil}})
}

// counterValue reads a Prometheus counter's value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}
