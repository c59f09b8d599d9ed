package healthevents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// ChildEnv names the variable that makes pipebench-sut (or a test binary
// that links package service) the health-event service: its value is the
// path of a ChildSpec.
const ChildEnv = "PIPEBENCH_HEALTHEVENTS_SPEC"

// ChildSpec is what the service's child process is told: its
// configuration, the folder for its store's and API server's data ("": one
// of its own) and the file to write its Ready to once it serves.
type ChildSpec struct {
	Config Config `json:"config"`
	Dir    string `json:"dir"`
	Ready  string `json:"ready"`
}

// Ready is what the service's child says once it serves: where, and the
// processes it started.
type Ready struct {
	Endpoint     string            `json:"endpoint"`
	HTTP         string            `json:"http"`
	Endpoints    map[string]string `json:"endpoints"`
	Store        bool              `json:"store,omitempty"`
	Kube         bool              `json:"kube,omitempty"`
	StorePID     int               `json:"store_pid,omitempty"`
	APIServerPID int               `json:"apiserver_pid,omitempty"`
}

// The service's control paths on its HTTP listener, for its parent.
const (
	ControlReset  = "/control/reset"
	ControlLedger = "/control/ledger"
)

// LedgerAnswer is the answer of ControlLedger.
type LedgerAnswer struct {
	Points []pipebench.Point `json:"points"`
	Error  string            `json:"error,omitempty"`
}

// StartTimeout bounds the service's start: its store's, and an API server
// started from the kube binaries (a control plane takes up to a minute on
// a loaded machine).
const StartTimeout = 5 * time.Minute

// SUT is the health-event service as pipebench runs it: a child process of
// pipebench-sut, started with Start and stopped with Shutdown.
type SUT struct {
	cfg   Config
	dir   string
	proc  *childproc.Proc
	ready Ready
}

var (
	_ pipebench.SUT            = (*SUT)(nil)
	_ pipebench.MultiEndpoint  = (*SUT)(nil)
	_ pipebench.ExitReporter   = (*SUT)(nil)
	_ pipebench.LedgerReporter = (*SUT)(nil)
)

// Start starts the service's child and returns once it serves.
func (s *SUT) Start(ctx context.Context) error {
	prog, err := childproc.Program(ctx, ChildEnv)
	if err != nil {
		return fmt.Errorf("the health-event service: %w", err)
	}
	base := s.dir
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "healthevents-")
	if err != nil {
		return err
	}
	spec := ChildSpec{Config: s.cfg, Dir: s.dir, Ready: filepath.Join(dir, "ready.json")}
	specPath := filepath.Join(dir, "spec.json")
	if err := childproc.WriteSpec(specPath, spec); err != nil {
		return err
	}
	cmd := exec.Command(prog)
	cmd.Env = append(os.Environ(), ChildEnv+"="+specPath)
	if s.proc, err = childproc.Start("the health-event service", cmd, filepath.Join(dir, "healthevents.log")); err != nil {
		return err
	}
	err = s.proc.WaitReady(ctx, StartTimeout, func() bool {
		b, err := os.ReadFile(spec.Ready)
		return err == nil && json.Unmarshal(b, &s.ready) == nil
	})
	if err != nil {
		childproc.Stop(context.Background(), s.proc)
		return err
	}
	return nil
}

// Endpoint is the gRPC endpoint: unix:///path.sock or host:port.
func (s *SUT) Endpoint() string { return s.ready.Endpoint }

// HTTPURL is the base URL of /effects, /nodes and the metrics.
func (s *SUT) HTTPURL() string { return s.ready.HTTP }

// Endpoints implements pipebench.MultiEndpoint: "grpc", "http" and, with a
// store the service started, "mongodb" (its connection string, for the
// mongodb driver's direct benchmark).
func (s *SUT) Endpoints() map[string]string { return s.ready.Endpoints }

// Instances implements pipebench.SUT: the service (its child process), the
// store and the API server, each with the metrics the service serves for
// it.
func (s *SUT) Instances() []pipebench.Instance {
	in := []pipebench.Instance{{Name: "healthevents-0", PID: s.proc.PID(), MetricsURL: s.ready.HTTP + "/metrics"}}
	if s.ready.Store {
		in = append(in, pipebench.Instance{Name: "database", PID: s.ready.StorePID, MetricsURL: s.ready.HTTP + "/metrics/database"})
	}
	if s.ready.Kube {
		in = append(in, pipebench.Instance{Name: "kube-apiserver", PID: s.ready.APIServerPID, MetricsURL: s.ready.HTTP + "/metrics/apiserver"})
	}
	return in
}

// Exited implements pipebench.ExitReporter: the service's child, when it
// ended during the run.
func (s *SUT) Exited() []string { return childproc.Exits(s.proc) }

// Reset forgets the effects reported to the previous case of a suite that
// keeps the service running (suite.Resetter).
func (s *SUT) Reset() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.ready.HTTP+ControlReset, nil)
	if err != nil {
		return
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

// Ledger implements pipebench.LedgerReporter: what the service holds of
// the events it accepted, read from it (see service.Server.Ledger).
func (s *SUT) Ledger(ctx context.Context, at time.Time, last bool) ([]pipebench.Point, error) {
	url := s.ready.HTTP + ControlLedger + "?at=" + strconv.FormatInt(at.UnixNano(), 10) + "&last=" + strconv.FormatBool(last)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the health-event service's ledger: %w", err)
	}
	defer resp.Body.Close()
	var ans LedgerAnswer
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&ans); err != nil {
		return nil, fmt.Errorf("the health-event service's ledger: %w", err)
	}
	if ans.Error != "" {
		err = fmt.Errorf("%s", ans.Error)
	}
	return ans.Points, err
}

// Shutdown stops the service's child (SIGTERM: it stops serving, then its
// store and API server).
func (s *SUT) Shutdown(ctx context.Context) error {
	if s.proc == nil {
		return nil
	}
	return childproc.Stop(ctx, s.proc)
}
