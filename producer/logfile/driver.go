// Package logfile is a passive log producer: a pipebench.Driver that appends
// every batch (newline-terminated lines, such as the loglines generator
// makes) to one of P producer files in a directory, for a pipeline that
// tails them (Fluent Bit's tail input, Vector's file source, the
// OpenTelemetry filelog receiver).
//
// Each batch goes whole, in one write, to one file: round robin, or by
// hashing the batch's Key. When a file reaches rotate_bytes it is rotated
// the way logrotate does without copytruncate: producer-3.log.N-1 is renamed
// to .N (the oldest beyond keep is removed), producer-3.log to .1, and a new
// producer-3.log is created, so a tailer that follows the renamed file by
// its inode reads it to the end. The driver counts bytes, lines, batches and
// rotations per producer (Stats, and Observe for an observer).
package logfile

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pipebench/pipebench"
)

// Routes.
const (
	RouteRoundRobin = "round_robin"
	RouteKey        = "key" // batches with the same Key go to the same file; no Key: round robin
)

// Config configures the "logfile" driver.
type Config struct {
	// Dir holds the files; empty means the folder the system under test
	// tails (the embedded log agent's), else "logs" in the run's scratch
	// directory.
	Dir string `yaml:"dir" json:"dir,omitempty"`
	// Producers is the number of files written to at once.
	Producers int `yaml:"producers" json:"producers"`
	// Name of each file; {n} is the producer number (0..producers-1).
	Name string `yaml:"name" json:"name"`
	// Route is round_robin or key.
	Route string `yaml:"route" json:"route"`
	// RotateBytes rotates a file once it holds at least this many bytes;
	// 0 never rotates.
	RotateBytes int64 `yaml:"rotate_bytes" json:"rotate_bytes"`
	// Keep is how many rotated files (.1 .. .keep) are kept; older ones
	// are removed.
	Keep int `yaml:"keep" json:"keep"`
	// Truncate starts every file empty and removes its rotated files;
	// false appends to what is there.
	Truncate bool `yaml:"truncate" json:"truncate"`
	// Fsync syncs the file after every batch (slow; off by default).
	Fsync bool `yaml:"fsync" json:"fsync"`
}

// DefaultConfig returns 20 producers, round robin, rotating at 10 MiB and
// keeping 5 rotated files each.
func DefaultConfig() *Config {
	return &Config{Producers: 20, Name: "producer-{n}.log", Route: RouteRoundRobin, RotateBytes: 10 << 20, Keep: 5, Truncate: true}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Producers < 1 || c.Producers > 100000 {
		errs = append(errs, fmt.Errorf("producers: %d is outside 1..100000", c.Producers))
	}
	if !strings.Contains(c.Name, "{n}") || strings.ContainsAny(c.Name, `/\`) {
		errs = append(errs, fmt.Errorf("name: %q must hold {n} and no directory", c.Name))
	}
	if c.Route != RouteRoundRobin && c.Route != RouteKey {
		errs = append(errs, fmt.Errorf("route: %q is not round_robin or key", c.Route))
	}
	if c.RotateBytes < 0 {
		errs = append(errs, fmt.Errorf("rotate_bytes: must be 0 (never) or more"))
	}
	if c.Keep < 0 || (c.RotateBytes > 0 && c.Keep < 1) {
		errs = append(errs, fmt.Errorf("keep: must be at least 1 when rotate_bytes is set"))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "logfile" driver.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("logfile", "appends batches of log lines to N producer files with size-based rotation, for a tailing pipeline", DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			cfg := *c
			if cfg.Dir == "" {
				cfg.Dir = targetDir(env)
			}
			if cfg.Dir == "" {
				if env.Dir == "" {
					return nil, pipebench.UsageError("the logfile driver has no directory", "set dir", nil)
				}
				cfg.Dir = filepath.Join(env.Dir, "logs")
			}
			return New(cfg)
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadLogLines})
}

// targetDir is the folder a tailing system under test reads (its "files"
// endpoint, or an endpoint that is an absolute path: the embedded log
// agent's), or "".
func targetDir(env pipebench.Env) string {
	if d := env.Targets["files"]; d != "" {
		return d
	}
	if filepath.IsAbs(env.Target) {
		return env.Target
	}
	return ""
}

// Driver writes batches to the producer files. Send is safe for concurrent
// use.
type Driver struct {
	cfg    Config
	files  []*file
	rr     atomic.Uint64
	closed atomic.Bool
}

var (
	_ pipebench.Driver   = (*Driver)(nil)
	_ pipebench.Observer = (*Driver)(nil)
)

// file is one producer's file.
type file struct {
	n    int
	path string

	mu   sync.Mutex
	f    *os.File
	size int64 // bytes in the current file

	bytes, lines, batches, rotations, errors atomic.Uint64
}

// New returns a driver for cfg; Start opens the files.
func New(cfg Config) (*Driver, error) {
	if cfg.Dir == "" {
		return nil, pipebench.UsageError("the logfile driver has no directory", "set dir", nil)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg}
	for i := 0; i < cfg.Producers; i++ {
		name := strings.ReplaceAll(cfg.Name, "{n}", strconv.Itoa(i))
		d.files = append(d.files, &file{n: i, path: filepath.Join(cfg.Dir, name)})
	}
	return d, nil
}

// Start creates the directory and opens every file.
func (d *Driver) Start(context.Context) error {
	if err := os.MkdirAll(d.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("logfile: %w", err)
	}
	for _, f := range d.files {
		flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
		if d.cfg.Truncate {
			flags |= os.O_TRUNC
			for i := 1; ; i++ {
				if err := os.Remove(rotated(f.path, i)); err != nil {
					break
				}
			}
		}
		fh, err := os.OpenFile(f.path, flags, 0o644)
		if err != nil {
			d.Shutdown(context.Background())
			return fmt.Errorf("logfile: %w", err)
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			d.Shutdown(context.Background())
			return fmt.Errorf("logfile: %w", err)
		}
		f.mu.Lock()
		f.f, f.size = fh, st.Size()
		f.mu.Unlock()
	}
	return nil
}

// Send appends b.Body to one producer's file in a single write, then
// rotates the file if it reached rotate_bytes.
func (d *Driver) Send(_ context.Context, b *pipebench.Batch) pipebench.Outcome {
	f := d.files[d.pick(b)]
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil && !d.closed.Load() {
		// A rotation failed half way: write on in a fresh file.
		if fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			st, _ := fh.Stat()
			f.f, f.size = fh, 0
			if st != nil {
				f.size = st.Size()
			}
		}
	}
	if f.f == nil {
		f.errors.Add(1)
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "file closed", Message: "logfile: " + f.path + " is closed (the driver was shut down, or reopening it after a failed rotation failed)"}
	}
	n, err := f.f.Write(b.Body)
	f.size += int64(n)
	f.bytes.Add(uint64(n))
	if err == nil && d.cfg.Fsync {
		err = f.f.Sync()
	}
	if err != nil {
		f.errors.Add(1)
		return writeError(err)
	}
	f.lines.Add(uint64(b.Count))
	f.batches.Add(1)
	if d.cfg.RotateBytes > 0 && f.size >= d.cfg.RotateBytes {
		if err := d.rotate(f); err != nil {
			// The batch was written; the failure is counted and the
			// next batch reopens the file if it was left closed.
			f.errors.Add(1)
		}
	}
	return pipebench.Outcome{Class: pipebench.ClassOK}
}

func (d *Driver) pick(b *pipebench.Batch) int {
	p := len(d.files)
	if p == 1 {
		return 0
	}
	if d.cfg.Route == RouteKey && b.Key != "" {
		h := fnv.New32a()
		h.Write([]byte(b.Key))
		return int(h.Sum32() % uint32(p))
	}
	return int((d.rr.Add(1) - 1) % uint64(p))
}

func rotated(path string, i int) string { return path + "." + strconv.Itoa(i) }

// rotate shifts path.i to path.i+1 (removing the one beyond keep), renames
// path to path.1 and opens a new path. f.mu is held.
func (d *Driver) rotate(f *file) error {
	if err := f.f.Close(); err != nil {
		f.f = nil
		return err
	}
	f.f = nil
	keep := d.cfg.Keep
	if err := os.Remove(rotated(f.path, keep)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for i := keep - 1; i >= 1; i-- {
		if err := os.Rename(rotated(f.path, i), rotated(f.path, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(f.path, rotated(f.path, 1)); err != nil {
		return err
	}
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	f.f, f.size = fh, 0
	f.rotations.Add(1)
	return nil
}

// writeError classifies a failed write; Message holds the error's text.
// The files are the target, so nothing here is unreached.
func writeError(err error) pipebench.Outcome {
	o := pipebench.Outcome{Class: pipebench.ClassError, Detail: "write failed", Message: err.Error()}
	switch {
	case errors.Is(err, syscall.ENOSPC):
		o.Detail = "disk full"
	case errors.Is(err, syscall.EDQUOT):
		o.Detail = "quota exceeded"
	case errors.Is(err, os.ErrClosed):
		o.Detail = "file closed"
	case errors.Is(err, os.ErrPermission):
		o.Detail = "permission denied"
	}
	return o
}

// Shutdown syncs and closes every file.
func (d *Driver) Shutdown(context.Context) error {
	d.closed.Store(true)
	var errs []error
	for _, f := range d.files {
		f.mu.Lock()
		if f.f != nil {
			if err := f.f.Sync(); err != nil {
				errs = append(errs, err)
			}
			if err := f.f.Close(); err != nil {
				errs = append(errs, err)
			}
			f.f = nil
		}
		f.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Dir is the directory the files are in.
func (d *Driver) Dir() string { return d.cfg.Dir }

// Files returns the path of every producer's current file.
func (d *Driver) Files() []string {
	out := make([]string, len(d.files))
	for i, f := range d.files {
		out[i] = f.path
	}
	return out
}

// Glob is a pattern matching every current file and none of the rotated
// ones, for a tailer's path setting ("/run/logs/producer-*.log").
func (d *Driver) Glob() string {
	return filepath.Join(d.cfg.Dir, strings.ReplaceAll(d.cfg.Name, "{n}", "*"))
}

// Stats is what one producer wrote so far.
type Stats struct {
	Producer  int
	Path      string
	Bytes     uint64 // written, over all its files
	Lines     uint64 // items of the batches written
	Batches   uint64
	Rotations uint64
	Errors    uint64 // failed writes and rotations
}

// Stats returns every producer's counters.
func (d *Driver) Stats() []Stats {
	out := make([]Stats, len(d.files))
	for i, f := range d.files {
		out[i] = Stats{Producer: i, Path: f.path, Bytes: f.bytes.Load(), Lines: f.lines.Load(), Batches: f.batches.Load(),
			Rotations: f.rotations.Load(), Errors: f.errors.Load()}
	}
	return out
}

// Observe implements pipebench.Observer: per producer, the counters
// producer_bytes_written, producer_lines_written, producer_rotations and
// producer_write_errors, labelled producer="N".
func (d *Driver) Observe(_ context.Context, at time.Time) ([]pipebench.Point, error) {
	out := make([]pipebench.Point, 0, 4*len(d.files))
	for _, s := range d.Stats() {
		l := map[string]string{"producer": strconv.Itoa(s.Producer)}
		out = append(out,
			pipebench.Point{Name: "producer_bytes_written", Labels: l, Kind: pipebench.KindCounter, At: at, Value: float64(s.Bytes)},
			pipebench.Point{Name: "producer_lines_written", Labels: l, Kind: pipebench.KindCounter, At: at, Value: float64(s.Lines)},
			pipebench.Point{Name: "producer_rotations", Labels: l, Kind: pipebench.KindCounter, At: at, Value: float64(s.Rotations)},
			pipebench.Point{Name: "producer_write_errors", Labels: l, Kind: pipebench.KindCounter, At: at, Value: float64(s.Errors)},
		)
	}
	return out, nil
}
