package otelcol

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pipebench/pipebench"
)

var _ pipebench.LedgerReporter = (*Collector)(nil)

// Ledger implements pipebench.LedgerReporter: from every replica's own
// metrics (and an agent's gateway's), what each exporter holds, in items:
// what the receivers accepted less what the exporter sent, failed to send
// and could not queue (otelcol_receiver_accepted_*, otelcol_exporter_sent_*,
// _send_failed_*, _enqueue_failed_*). That is its queue, whether in memory
// or on disk, the requests it retries and the batch processor's buffer.
// The collector's own otelcol_exporter_queue_size counts requests, not
// items, with the default sizer, so it is not used. What it dropped is
// its exporters' failed and unqueued items (and, for an agent, which
// nobody can retry, what its receiver refused). A log agent's unread
// lines are the lines in the files it tails less the log records its
// filelog receiver read. A metric agent counts metric points, of which
// the run's items (its tracer samples) are a few: its points carry counts.
func (c *Collector) Ledger(ctx context.Context, at time.Time, _ bool) ([]pipebench.Point, error) {
	var pts []pipebench.Point
	var errs []error
	read := func(col *Collector, name string, r *replica, counts string) {
		p, err := col.ledgerOf(ctx, name, r, counts, at)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			pts = append(pts, unknown("held", fmt.Sprintf("%s's metrics could not be read: %v", name, err), at))
			return
		}
		pts = append(pts, p...)
	}
	counts := ""
	if c.cfg.Receiver == ReceiverPrometheus {
		counts = "metric points"
	}
	if c.cfg.ConfigFile != "" {
		// Your own configuration: which receivers feed which exporters is
		// not known.
		return []pipebench.Point{unknown("held", "the collector runs your config_file, whose pipelines pipebench does not know (it reads what a collector holds from the receivers feeding each exporter)", at)}, nil
	}
	for _, r := range c.replicas {
		read(c, "collector-"+strconv.Itoa(r.index), r, counts)
	}
	if g := c.gateway; g != nil {
		for _, r := range g.replicas {
			read(g, "gateway-"+strconv.Itoa(r.index), r, counts)
		}
	}
	if c.cfg.Receiver == ReceiverFilelog && len(c.replicas) == 1 {
		p, err := c.unread(ctx, at)
		if err != nil {
			errs = append(errs, err)
		}
		pts = append(pts, p...)
	}
	return pts, errors.Join(errs...)
}

func unknown(term, why string, at time.Time) pipebench.Point {
	return pipebench.Point{Name: pipebench.LedgerUnknown, Labels: map[string]string{"term": term, "because": why}, Kind: pipebench.KindGauge, At: at, Value: 1}
}

// signalUnit is how the collector's metrics name the items of a signal.
func signalUnit(signal string) string {
	switch signal {
	case "metrics":
		return "metric_points"
	case "logs":
		return "log_records"
	}
	return "spans"
}

// ledgerOf reads one collector process's ledger: held and dropped per
// exporter (its pipeline's name in the label pipeline when there are
// several).
func (c *Collector) ledgerOf(ctx context.Context, name string, r *replica, counts string, at time.Time) ([]pipebench.Point, error) {
	fams, err := scrapeFamilies(ctx, r.metricsURL())
	if err != nil {
		return nil, err
	}
	unit := signalUnit(c.cfg.signal())
	accepted, _ := sumOf(fams, "otelcol_receiver_accepted_"+unit, "")
	refused, _ := sumOf(fams, "otelcol_receiver_refused_"+unit, "")
	sent := bySum(fams, "otelcol_exporter_sent_"+unit)
	failed := bySum(fams, "otelcol_exporter_send_failed_"+unit)
	unqueued := bySum(fams, "otelcol_exporter_enqueue_failed_"+unit)
	var pts []pipebench.Point
	point := func(series string, v float64, labels ...string) {
		l := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		if counts != "" {
			l["counts"] = counts
		}
		pts = append(pts, pipebench.Point{Name: series, Labels: l, Kind: pipebench.KindGauge, At: at, Value: v})
	}
	exporters := make([]string, 0, c.cfg.Pipelines)
	for i := 1; i <= c.cfg.Pipelines; i++ {
		exporters = append(exporters, c.cfg.Exporter+"/p"+strconv.Itoa(i))
	}
	var dropped float64
	for i, e := range exporters {
		held := accepted - sent[e] - failed[e] - unqueued[e]
		where := name + " exporter " + e
		labels := []string{"where", where}
		if c.cfg.Pipelines > 1 {
			labels = append(labels, "pipeline", "p"+strconv.Itoa(i+1))
		}
		if held < 0 {
			// Counters that do not add up (scraped while a request
			// was counted at one end only): read again next time.
			// (No numbers in the reason: it labels a series, which
			// must not be a new one at every reading.)
			pts = append(pts, unknown("held", where+": its counters do not add up (more sent, failed and not queued than its receivers accepted)", at))
			continue
		}
		point(pipebench.LedgerHeld, held, labels...)
		point(pipebench.LedgerDropped, failed[e]+unqueued[e], labels...)
		dropped += failed[e] + unqueued[e]
	}
	if c.cfg.Receiver != ReceiverOTLP && refused > 0 {
		// An agent pulls: what its receiver refused nobody sends again.
		point(pipebench.LedgerDropped, refused, "where", name+" receiver")
	}
	return pts, nil
}

// scrapeFamilies reads a Prometheus text page.
func scrapeFamilies(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(io.LimitReader(resp.Body, 32<<20))
}

// family returns the metric family name, or name_total.
func family(fams map[string]*dto.MetricFamily, name string) *dto.MetricFamily {
	if f := fams[name]; f != nil {
		return f
	}
	return fams[name+"_total"]
}

// sumOf sums a counter or gauge over its series.
func sumOf(fams map[string]*dto.MetricFamily, name, _ string) (float64, bool) {
	f := family(fams, name)
	if f == nil {
		return 0, false
	}
	var sum float64
	for _, m := range f.Metric {
		sum += value(m)
	}
	return sum, true
}

// bySum sums a metric per value of its exporter label.
func bySum(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := family(fams, name)
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		out[label(m, "exporter")] += value(m)
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// lineCounter counts the lines written to a log agent's files, reading
// each file once, from where it stopped the last time (files are only
// appended to, and rotated by renaming): by inode, the bytes read and the
// lines counted. Lines of files removed since (rotated beyond keep) are
// remembered apart.
type lineCounter struct {
	mu    sync.Mutex
	files map[uint64]*counted
	gone  uint64 // lines of files no longer there
}

type counted struct {
	bytes int64
	lines uint64
	seen  bool
}

// count returns the lines in the files of dir (every file, rotated ones
// included), and those of files removed since the last count.
func (lc *lineCounter) count(dir string) (lines, gone uint64, err error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.files == nil {
		lc.files = map[uint64]*counted{}
	}
	for _, f := range lc.files {
		f.seen = false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if err != nil {
			continue // removed while listing: counted as gone below
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return 0, 0, fmt.Errorf("%s: no inode", path)
		}
		f := lc.files[st.Ino]
		if f == nil {
			f = &counted{}
			lc.files[st.Ino] = f
		}
		f.seen = true
		if info.Size() > f.bytes {
			n, read, err := countLines(path, f.bytes, info.Size())
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return 0, 0, err
			}
			f.lines += n
			f.bytes += read
		}
	}
	for ino, f := range lc.files {
		if !f.seen {
			lc.gone += f.lines
			delete(lc.files, ino)
			continue
		}
		lines += f.lines
	}
	return lines, lc.gone, nil
}

// countLines counts the newlines of path between from and to, and how
// many bytes up to the last of them it read (a line being written is
// counted once it ends).
func countLines(path string, from, to int64) (uint64, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0, 0, err
	}
	br := bufio.NewReaderSize(io.LimitReader(f, to-from), 1<<20)
	buf := make([]byte, 1<<20)
	var lines uint64
	var upTo, pos int64
	for {
		n, err := br.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			lines += uint64(bytes.Count(chunk, []byte{'\n'}))
			if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
				upTo = pos + int64(i) + 1
			}
			pos += int64(n)
		}
		if err == io.EOF {
			return lines, upTo, nil
		}
		if err != nil {
			return lines, upTo, err
		}
	}
}

// unread reads a log agent's unread lines: the lines in its files less
// the log records its filelog receiver read (accepted and refused). The
// collector's counters are read first, the files after: a line written in
// between counts as unread, never one read as unread twice.
func (c *Collector) unread(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	where := "files in " + c.LogDir()
	fams, err := scrapeFamilies(ctx, c.replicas[0].metricsURL())
	if err != nil {
		return []pipebench.Point{unknown("unread", fmt.Sprintf("collector-0's metrics could not be read: %v", err), at)}, err
	}
	accepted, _ := sumOf(fams, "otelcol_receiver_accepted_log_records", "")
	refused, _ := sumOf(fams, "otelcol_receiver_refused_log_records", "")
	lines, gone, err := c.lines.count(c.LogDir())
	if err != nil {
		return []pipebench.Point{unknown("unread", fmt.Sprintf("the lines of the %s could not be counted: %v", where, err), at)}, err
	}
	if gone > 0 {
		return []pipebench.Point{unknown("unread", fmt.Sprintf("%s lines were in files removed by rotation before the end: whether the agent read them is not known", pipebench.FormatCount(float64(gone))), at)}, nil
	}
	v := float64(lines) - accepted - refused
	if v < 0 {
		return []pipebench.Point{unknown("unread", fmt.Sprintf("the collector read %s log records, more than the %s lines in the %s (a line split or joined by the receiver?)",
			pipebench.FormatCount(accepted+refused), pipebench.FormatCount(float64(lines)), where), at)}, nil
	}
	return []pipebench.Point{{Name: pipebench.LedgerUnread, Labels: map[string]string{"where": where}, Kind: pipebench.KindGauge, At: at, Value: v}}, nil
}
