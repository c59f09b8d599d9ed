// Package dashboard serves a live page of a running test on loopback: the
// progress line, the KPI table of the phases so far and the same charts as
// the HTML report (values on hover, zoom), refreshed every second from the
// run so far. It binds to 127.0.0.1 unless told otherwise, and needs
// nothing from the network.
package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report/chart"
	htmlreport "github.com/pipebench/pipebench/report/html"
	"github.com/pipebench/pipebench/runner"
)

// Server is the live dashboard of one run.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	mu   sync.Mutex
	last runner.Progress
	seen bool
	done *pipebench.Result
	// partial is the run so far as last computed, at partialAt: pages
	// polling at once share it. pmu guards them (not mu: the runner's
	// updates do not wait for a computation).
	pmu       sync.Mutex
	partial   *pipebench.Result
	partialAt time.Time
}

// refresh is how old the run so far may be when a page asks for it.
const refresh = 500 * time.Millisecond

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves until
// Shutdown.
func Start(addr string) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("cannot serve the dashboard on %s", addr), "choose a free address, such as 127.0.0.1:0", err)
	}
	s := &Server{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /api/live", s.live)
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// URL is the page's address.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// Update records the runner's latest progress; pass it as (or call it from)
// runner.Params.Progress.
func (s *Server) Update(p runner.Progress) {
	s.mu.Lock()
	s.last, s.seen = p, true
	s.mu.Unlock()
}

// Begin shows the next run (a suite's next case) from now on.
func (s *Server) Begin() {
	s.mu.Lock()
	s.last, s.seen, s.done = runner.Progress{}, false, nil
	s.mu.Unlock()
	s.pmu.Lock()
	s.partial = nil
	s.pmu.Unlock()
}

// Finish shows the final Result from now on.
func (s *Server) Finish(r *pipebench.Result) {
	s.mu.Lock()
	s.done = r
	s.mu.Unlock()
}

// Shutdown stops serving.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// current returns what to show: the final result, or the run so far
// (with its KPIs when the runner gives them, else its series alone).
func (s *Server) current() (res *pipebench.Result, line string, done bool) {
	s.mu.Lock()
	p, seen, final := s.last, s.seen, s.done
	s.mu.Unlock()
	switch {
	case final != nil:
		return final, "finished: " + string(final.Manifest.Status), true
	case seen && p.Partial != nil:
		s.pmu.Lock()
		defer s.pmu.Unlock()
		if s.partial == nil || time.Since(s.partialAt) >= refresh {
			s.partial, s.partialAt = p.Partial(), time.Now()
		}
		return s.partial, p.String(), false
	case seen && p.Snapshot != nil:
		return p.Snapshot(), p.String(), false
	}
	return &pipebench.Result{Manifest: pipebench.Manifest{Scenario: "pipebench", Started: time.Now()}}, "starting…", false
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	res, _, _ := s.current()
	var b bytes.Buffer
	if err := htmlreport.Live(&b, res, "/api/live"); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

// Live is the JSON the page polls.
type Live struct {
	Progress string  `json:"progress"`
	Done     bool    `json:"done"`
	Charts   []Chart `json:"charts"`
	// Table is the KPI table of the run so far, an HTML fragment.
	Table string `json:"table"`
}

// Chart is one chart, drawn.
type Chart struct {
	ID     string `json:"id"`
	Points int    `json:"points"`
	SVG    string `json:"svg"`
}

func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	res, line, done := s.current()
	out := Live{Progress: line, Done: done, Charts: []Chart{}}
	for _, c := range chart.Build(res) {
		var b bytes.Buffer
		if err := c.SVG(&b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out.Charts = append(out.Charts, Chart{ID: c.ID, Points: c.Points(), SVG: b.String()})
	}
	var table bytes.Buffer
	if err := htmlreport.Table(&table, res); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out.Table = table.String()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(out); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		return
	}
}
