package otelcol

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The metrics a log agent's sidecar adds to the collector's own: what the
// reference's Fluent Bit table shows (input and output KByte/s, the
// filesystem buffer), for the collector. A KByte is 1,024 bytes.
const (
	// MetricInputKBytes counts the KBytes the agent process read
	// (/proc/PID/io rchar since it started: the log files, and a few
	// hundred bytes a second of scrape requests and /proc files).
	MetricInputKBytes = "pipebench_agent_input_kbytes_total"
	// MetricOutputKBytes counts the KBytes of export request bodies the
	// agent's otlphttp exporters had answered with 2xx (the collector's
	// own http_client_request_body_size histogram, uncompressed); absent
	// with the otlp (gRPC) exporter, which does not count bytes.
	MetricOutputKBytes = "pipebench_agent_output_kbytes_total"
	// MetricBufferKBytes is the size on disk (allocated blocks) of the
	// agent's file_storage folder: its read offsets and persistent
	// sending queues.
	MetricBufferKBytes = "pipebench_agent_filesystem_buffer_kbytes"
)

// sidecar serves a log agent's metrics on loopback: the collector's own
// exposition, then the agent's input, output and filesystem buffer, as a
// node's metrics would stand beside a pod's in a cluster.
type sidecar struct {
	collector string // the collector's own metrics URL
	pid       int
	storage   string
	rchar0    uint64 // rchar when the sidecar started
	http      bool   // the exporter is otlphttp: output is counted from the start
	ln        net.Listener
	srv       *http.Server
	client    *http.Client
}

// startSidecar serves the metrics of the collector process pid (its own
// at collector) and of its storage folder, on an ephemeral loopback port.
func startSidecar(collector string, pid int, storage string, httpExporter bool) (*sidecar, error) {
	rchar, err := ReadChars(pid)
	if err != nil {
		return nil, fmt.Errorf("the log agent's I/O counters: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sidecar{collector: collector, pid: pid, storage: storage, rchar0: rchar, http: httpExporter, ln: ln, client: &http.Client{Timeout: 5 * time.Second}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", s.serve)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sidecar) url() string { return "http://" + s.ln.Addr().String() + "/metrics" }

func (s *sidecar) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}

// serve answers a scrape: the collector's exposition as it is, then the
// sidecar's three series.
func (s *sidecar) serve(w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, s.collector, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		http.Error(w, "the collector's metrics: "+err.Error(), http.StatusBadGateway)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		http.Error(w, fmt.Sprintf("the collector's metrics: HTTP %d %v", resp.StatusCode, err), http.StatusBadGateway)
		return
	}
	var extra bytes.Buffer
	if rchar, err := ReadChars(s.pid); err == nil {
		fmt.Fprintf(&extra, "# HELP %s KBytes the agent read (rchar).\n# TYPE %s counter\n%s %g\n", MetricInputKBytes, MetricInputKBytes, MetricInputKBytes, float64(rchar-s.rchar0)/1024)
	}
	if out, ok := ExportedBodyBytes(body); ok || s.http {
		fmt.Fprintf(&extra, "# HELP %s KBytes of export request bodies answered 2xx.\n# TYPE %s counter\n%s %g\n", MetricOutputKBytes, MetricOutputKBytes, MetricOutputKBytes, out/1024)
	}
	if du, err := DiskUsage(s.storage); err == nil {
		fmt.Fprintf(&extra, "# HELP %s Size on disk of the agent's file_storage.\n# TYPE %s gauge\n%s %g\n", MetricBufferKBytes, MetricBufferKBytes, MetricBufferKBytes, float64(du)/1024)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(body)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		w.Write([]byte{'\n'})
	}
	w.Write(extra.Bytes())
}

// ReadChars returns rchar of /proc/PID/io: the bytes process pid read
// through read system calls (files, sockets, pipes) since it started.
func ReadChars(pid int) (uint64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("/proc/" + strconv.Itoa(pid) + "/io has no rchar")
}

// DiskUsage returns the bytes allocated on disk to dir and everything
// under it (st_blocks x 512, as du -s counts them).
func DiskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a file removed by compaction while walking
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	return n, err
}

// ExportedBodyBytes sums the collector's http_client_request_body_size
// histogram over the requests answered 2xx, from its Prometheus text
// exposition: the uncompressed bytes of every export request its
// otlphttp exporters delivered. ok is false when the exposition has no
// such histogram (no otlphttp exporter, or nothing sent yet).
func ExportedBodyBytes(exposition []byte) (sum float64, ok bool) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(exposition))
	if err != nil {
		return 0, false
	}
	for _, name := range []string{"http_client_request_body_size_bytes", "http_client_request_body_size"} {
		f := fams[name]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.Metric {
			if strings.HasPrefix(label(m, "http_response_status_code"), "2") {
				sum += m.GetHistogram().GetSampleSum()
				ok = true
			}
		}
	}
	return sum, ok
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
