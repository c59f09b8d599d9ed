package promql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httpbody"
	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// StartConfig has pipebench start a Prometheus server for the run instead
// of querying one that runs already.
type StartConfig struct {
	// Binary is the prometheus 2.x executable: a path, or a name looked up
	// on PATH (Debian: apt-get install prometheus).
	Binary string `yaml:"binary" json:"binary"`
	// ScrapeInterval is how often it scrapes (default 1s).
	ScrapeInterval pipebench.Duration `yaml:"scrape_interval" json:"scrape_interval"`
	// Targets are more metrics URLs to scrape (http://host:port/metrics),
	// besides every instance of the system under test that serves metrics.
	Targets []string `yaml:"targets" json:"targets,omitempty"`
	// StartTimeout bounds the wait until it is ready and has scraped
	// every target once (default 60s).
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
}

// defaults fills the keys left out: prometheus on PATH, every second,
// ready within a minute.
func (s *StartConfig) defaults() {
	if s.Binary == "" {
		s.Binary = "prometheus"
	}
	if s.ScrapeInterval == 0 {
		s.ScrapeInterval = pipebench.Duration(time.Second)
	}
	if s.StartTimeout == 0 {
		s.StartTimeout = pipebench.Duration(time.Minute)
	}
}

func (s *StartConfig) validate() []error {
	var errs []error
	if s.Binary == "" {
		errs = append(errs, errors.New("start.binary: give the prometheus executable"))
	}
	if s.ScrapeInterval.D() < 100*time.Millisecond {
		errs = append(errs, errors.New("start.scrape_interval: must be at least 100ms"))
	}
	for _, t := range s.Targets {
		if u, err := url.Parse(t); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("start.targets: %q is not an http:// metrics URL", t))
		}
	}
	if s.StartTimeout <= 0 {
		errs = append(errs, errors.New("start.start_timeout: must be more than 0"))
	}
	return errs
}

// scrapeTarget is one job of the started server.
type scrapeTarget struct {
	job, scheme, host, path string
}

// server is a Prometheus the observer started.
type server struct {
	proc *childproc.Proc
	url  string
	jobs []string
}

// startServer starts prometheus scraping the instances' metrics URLs (one
// job each, named after the instance) and cfg's targets, with its
// configuration, data and log in dir, and returns once every target was
// scraped once (successfully or not).
func startServer(ctx context.Context, cfg StartConfig, instances []pipebench.Instance, dir string) (*server, error) {
	bin, err := exec.LookPath(cfg.Binary)
	if err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("promql: start: %s is not installed", cfg.Binary),
			"install Prometheus 2.x (Debian: apt-get install prometheus), give its path as start.binary, or give the url of a running one instead of start", err)
	}
	var targets []scrapeTarget
	add := func(job, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		path := u.EscapedPath()
		if path == "" {
			path = "/metrics"
		}
		targets = append(targets, scrapeTarget{job: job, scheme: u.Scheme, host: u.Host, path: path})
	}
	for _, in := range instances {
		if in.MetricsURL != "" {
			add(in.Name, in.MetricsURL)
		}
	}
	for i, t := range cfg.Targets {
		add("target-"+strconv.Itoa(i), t)
	}
	if len(targets) == 0 {
		return nil, pipebench.UsageError("promql: start: nothing to scrape", "use it with an embedded system under test that serves metrics, or list start.targets", nil)
	}
	if dir == "" {
		dir = os.TempDir()
	}
	iv := cfg.ScrapeInterval.D()
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\nscrape_configs:\n", iv, iv, iv)
	s := &server{}
	for _, t := range targets {
		fmt.Fprintf(&b, "  - job_name: %q\n    scheme: %s\n    metrics_path: %q\n    static_configs:\n      - targets: [%q]\n", t.job, t.scheme, t.path, t.host)
		s.jobs = append(s.jobs, t.job)
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		port, err := childproc.FreePort()
		if err != nil {
			return nil, err
		}
		s.url = "http://127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(bin, "--config.file="+conf, "--web.listen-address=127.0.0.1:"+strconv.Itoa(port),
			"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"), "--storage.tsdb.retention.time=2d", "--log.level=warn")
		if s.proc, err = childproc.Start("prometheus", cmd, filepath.Join(dir, "prometheus.log")); err != nil {
			return nil, err
		}
		err = s.proc.WaitReady(ctx, cfg.StartTimeout.D(), s.scrapedAll)
		if err == nil {
			return s, nil
		}
		childproc.Stop(context.Background(), s.proc)
		if attempt >= 2 || !childproc.PortTaken(err) {
			return nil, fmt.Errorf("promql: start: %w", err)
		}
	}
}

// scrapedAll reports whether every job was scraped once (it has an up
// series; one that failed shows as its KPIs missing, not as a start
// failure).
func (s *server) scrapedAll() bool {
	req, err := http.NewRequest(http.MethodGet, s.url+"/api/v1/query?query="+url.QueryEscape("count(up)"), nil)
	if err != nil {
		return false
	}
	_, body, err := httpbody.Read(http.DefaultClient, req, 1<<20)
	if err != nil {
		return false
	}
	var r apiResponse
	if json.Unmarshal(body, &r) != nil || r.Status != "success" {
		return false
	}
	pts := toPoints(Query{Name: "up"}, &r.Data)
	return len(pts) == 1 && int(pts[0].Value) >= len(s.jobs)
}

func (s *server) stop() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return childproc.Stop(ctx, s.proc)
}
