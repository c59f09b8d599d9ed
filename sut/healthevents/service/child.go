package service

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/pipebench/pipebench/internal/proc/childproc"
	"github.com/pipebench/pipebench/sut/healthevents"
	"github.com/pipebench/pipebench/sut/plumbing/docstore"
)

// MaybeRunChild runs the health-event service, and then exits, if this
// process was started as its child (healthevents.ChildEnv set: its value
// is the path of a healthevents.ChildSpec); otherwise it returns at once.
// pipebench-sut calls it first thing, and the test binaries that start the
// service as their own child. The service's document store (FerretDB) is a
// child of the same program, so this also lets it be that.
func MaybeRunChild() {
	docstore.MaybeRunChild()
	childproc.RunIfChild(healthevents.ChildEnv, "health-event service", runChild)
}

// runChild is the child's main: the service started as the spec says,
// what it listens on written to the spec's ready file, until SIGTERM.
func runChild(path string) error {
	var spec healthevents.ChildSpec
	if err := childproc.ReadSpec(path, &spec); err != nil {
		return err
	}
	s, err := New(spec.Config)
	if err != nil {
		return err
	}
	s.dir = spec.Dir
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.Start(ctx); err != nil {
		return err
	}
	ready := healthevents.Ready{Endpoint: s.Endpoint(), HTTP: s.HTTPURL(), Endpoints: s.Endpoints()}
	if s.store != nil && s.store.server != nil {
		ready.StorePID = s.store.server.PID()
	}
	if s.kube != nil {
		ready.APIServerPID = s.kube.apiServerPID()
	}
	ready.Store, ready.Kube = s.store != nil, s.kube != nil
	if err := childproc.WriteSpec(spec.Ready+".tmp", ready); err != nil {
		return err
	}
	if err := os.Rename(spec.Ready+".tmp", spec.Ready); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.Shutdown(sctx)
}

// serveControl answers the parent's requests on the service's HTTP
// listener: POST /control/reset (Reset) and GET
// /control/ledger?at=UNIXNANO&last=true (Ledger, as JSON points).
func (s *Server) serveControl(mux *http.ServeMux) {
	mux.HandleFunc("POST "+healthevents.ControlReset, func(w http.ResponseWriter, _ *http.Request) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET "+healthevents.ControlLedger, func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		if ns, err := strconv.ParseInt(r.URL.Query().Get("at"), 10, 64); err == nil {
			at = time.Unix(0, ns)
		}
		pts, err := s.Ledger(r.Context(), at, r.URL.Query().Get("last") == "true")
		ans := healthevents.LedgerAnswer{Points: pts}
		if err != nil {
			ans.Error = err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ans)
	})
}
