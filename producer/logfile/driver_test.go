package logfile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/payload/loglines"
)

func newDriver(t testing.TB, mut func(*Config)) *Driver {
	t.Helper()
	c := DefaultConfig()
	c.Dir = t.TempDir()
	c.Producers = 4
	if mut != nil {
		mut(c)
	}
	d, err := New(*c)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

// readAll reads every file in dir (current and rotated) and returns, per
// producer file name without the rotation suffix, the total bytes, and
// calls fn for every line's sequence number.
func readAll(t *testing.T, dir string, fn func(file string, seq uint64)) (sizes map[string]int64, files []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sizes = map[string]int64{}
	for _, e := range entries {
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		base := e.Name()
		if i := strings.Index(base, ".log"); i >= 0 {
			base = base[:i+4]
		}
		sizes[base] += int64(len(body))
		files = append(files, e.Name())
		if len(body) > 0 && body[len(body)-1] != '\n' {
			t.Fatalf("%s does not end with a whole line", e.Name())
		}
		_, unmatched := loglines.ExtractLines(body, func(seq uint64, _ time.Time) { fn(e.Name(), seq) })
		if unmatched != 0 {
			t.Fatalf("%s: %d lines without a sequence number", e.Name(), unmatched)
		}
	}
	sort.Strings(files)
	return sizes, files
}

// Every sequence number is in exactly one line of exactly one file, across
// rotations, with batches sent concurrently, in every format.
func TestEverySeqExactlyOnceAcrossRotations(t *testing.T) {
	for _, format := range loglines.Formats {
		t.Run(format, func(t *testing.T) {
			d := newDriver(t, func(c *Config) { c.RotateBytes = 16 << 10; c.Keep = 1000 })
			g, err := loglines.New(loglines.Config{Format: format, Size: 200})
			if err != nil {
				t.Fatal(err)
			}
			const senders, batches, per = 4, 150, 10 // 6000 lines, 1.2 MB
			var wg sync.WaitGroup
			for s := 0; s < senders; s++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := s; i < batches*senders; i += senders {
						b := g.Next(uint64(i*per+1), per, time.Now())
						if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
							t.Errorf("send: %+v", o)
						}
						g.Release(&b)
					}
				}()
			}
			wg.Wait()
			if err := d.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			seen := map[uint64]int{}
			sizes, files := readAll(t, d.Dir(), func(_ string, seq uint64) { seen[seq]++ })
			total := senders * batches * per
			if len(seen) != total {
				t.Fatalf("%d distinct sequence numbers, want %d", len(seen), total)
			}
			for seq := uint64(1); seq <= uint64(total); seq++ {
				if seen[seq] != 1 {
					t.Fatalf("seq %d seen %d times", seq, seen[seq])
				}
			}
			var lines uint64
			for _, s := range d.Stats() {
				lines += s.Lines
				base := filepath.Base(s.Path)
				if s.Rotations < 10 || s.Errors != 0 {
					t.Fatalf("%s: %+v", base, s)
				}
				if uint64(sizes[base]) != s.Bytes {
					t.Fatalf("%s: %d bytes on disk, stats say %d", base, sizes[base], s.Bytes)
				}
				for i := 1; i <= int(s.Rotations); i++ {
					st, err := os.Stat(rotated(s.Path, i))
					if err != nil {
						t.Fatal(err)
					}
					if st.Size() < 16<<10 || st.Size() >= 16<<10+per*400 {
						t.Fatalf("%s: %d bytes", rotated(s.Path, i), st.Size())
					}
				}
			}
			if lines != uint64(total) || len(files) < 4*10 {
				t.Fatalf("%d lines in stats, %d files", lines, len(files))
			}
		})
	}
}

func TestRoundRobinIsEven(t *testing.T) {
	d := newDriver(t, func(c *Config) { c.RotateBytes = 0 })
	g, _ := loglines.New(loglines.Config{Format: loglines.FormatJSON})
	for i := 0; i < 40; i++ {
		b := g.Next(uint64(i+1), 1, time.Now())
		d.Send(context.Background(), &b)
	}
	d.Shutdown(context.Background())
	for _, s := range d.Stats() {
		if s.Batches != 10 || s.Rotations != 0 {
			t.Fatalf("%+v", s)
		}
	}
	// Batch i went to file i%4.
	readAll(t, d.Dir(), func(file string, seq uint64) {
		if want := fmt.Sprintf("producer-%d.log", (seq-1)%4); file != want {
			t.Fatalf("seq %d in %s, want %s", seq, file, want)
		}
	})
}

func TestKeyRouting(t *testing.T) {
	d := newDriver(t, func(c *Config) { c.Route = RouteKey; c.Producers = 8 })
	g, _ := loglines.New(loglines.Config{Format: loglines.FormatSyslog})
	keys := []string{"alpha", "beta", "gamma"}
	for i := 0; i < 60; i++ {
		b := g.Next(uint64(2*i+1), 2, time.Now())
		b.Key = keys[i%3]
		d.Send(context.Background(), &b)
	}
	d.Shutdown(context.Background())
	fileOfKey := map[string]string{}
	readAll(t, d.Dir(), func(file string, seq uint64) {
		k := keys[(seq-1)/2%3]
		if f, ok := fileOfKey[k]; ok && f != file {
			t.Fatalf("key %s in %s and %s", k, f, file)
		}
		fileOfKey[k] = file
	})
	if len(fileOfKey) != 3 {
		t.Fatalf("%v", fileOfKey)
	}
}

func TestKeepRemovesOldest(t *testing.T) {
	d := newDriver(t, func(c *Config) { c.Producers = 1; c.RotateBytes = 2000; c.Keep = 2 })
	g, _ := loglines.New(loglines.Config{Format: loglines.FormatApacheCommon, Size: 199})
	for i := 0; i < 100; i++ { // 100 lines of 200 bytes: rotations after every 10
		b := g.Next(uint64(i+1), 1, time.Now())
		d.Send(context.Background(), &b)
	}
	d.Shutdown(context.Background())
	var got []uint64
	_, files := readAll(t, d.Dir(), func(_ string, seq uint64) { got = append(got, seq) })
	if fmt.Sprint(files) != "[producer-0.log producer-0.log.1 producer-0.log.2]" {
		t.Fatalf("files %v", files)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if len(got) != 20 || got[0] != 81 || got[19] != 100 {
		t.Fatalf("kept %v", got)
	}
	if s := d.Stats()[0]; s.Rotations != 10 || s.Bytes != 20000 {
		t.Fatalf("%+v", s)
	}
}

func TestTruncateOrAppend(t *testing.T) {
	dir := t.TempDir()
	g, _ := loglines.New(loglines.Config{Format: loglines.FormatJSON})
	run := func(truncate bool, seq uint64) {
		d, err := New(Config{Dir: dir, Producers: 1, Name: "p{n}.log", Route: RouteRoundRobin, RotateBytes: 10, Keep: 10, Truncate: truncate})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		b := g.Next(seq, 1, time.Now())
		if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK {
			t.Fatal(o)
		}
		b = g.Next(seq+1, 1, time.Now())
		d.Send(context.Background(), &b)
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassError {
			t.Fatalf("send after shutdown: %+v", o)
		}
	}
	count := func() int {
		n := 0
		readAll(t, dir, func(string, uint64) { n++ })
		return n
	}
	run(true, 1)
	run(false, 3)
	if n := count(); n != 4 {
		t.Fatalf("append: %d lines", n)
	}
	run(true, 5)
	if n := count(); n != 2 {
		t.Fatalf("truncate: %d lines", n)
	}
}

func TestFactoryAndObserve(t *testing.T) {
	f := Factory()
	cfg := f.NewConfig().(*Config)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.New(cfg, pipebench.Env{}); err == nil {
		t.Fatal("no directory accepted")
	}
	env := pipebench.Env{Dir: t.TempDir()}
	drv, err := f.New(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	d := drv.(*Driver)
	if d.Dir() != filepath.Join(env.Dir, "logs") || d.Glob() != filepath.Join(env.Dir, "logs", "producer-*.log") || len(d.Files()) != 20 {
		t.Fatalf("%s %s %d", d.Dir(), d.Glob(), len(d.Files()))
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := pipebench.Batch{Seq: 1, Count: 1, Body: []byte("pb_seq=1 pb_sent=2\n")}
	d.Send(context.Background(), &b)
	d.Shutdown(context.Background())
	pts, _ := d.Observe(context.Background(), time.Now())
	if len(pts) != 80 || pts[0].Name != "producer_bytes_written" || pts[0].Value != 19 || pts[1].Value != 1 || pts[0].Labels["producer"] != "0" {
		t.Fatalf("%d points: %+v", len(pts), pts[:2])
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Producers = 0 },
		func(c *Config) { c.Name = "x.log" },
		func(c *Config) { c.Name = "a/{n}.log" },
		func(c *Config) { c.Route = "random" },
		func(c *Config) { c.Keep = 0 },
		func(c *Config) { c.RotateBytes = -1 },
	} {
		c := DefaultConfig()
		bad(c)
		if c.Validate() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

// BenchmarkSend writes 100-line batches of 256-byte lines to 20 files,
// rotating at 10 MiB, from parallel senders.
func BenchmarkSend(b *testing.B) {
	for _, format := range []string{loglines.FormatApacheCombined, loglines.FormatJSON} {
		b.Run(format, func(b *testing.B) {
			d := newDriver(b, func(c *Config) { c.Producers = 20; c.Keep = 2 })
			g, _ := loglines.New(loglines.Config{Format: format, Size: 255})
			var mu sync.Mutex
			var seq uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mu.Lock()
					s := seq
					seq += 100
					mu.Unlock()
					batch := g.Next(s+1, 100, time.Now())
					d.Send(context.Background(), &batch)
					g.Release(&batch)
				}
			})
			b.StopTimer()
			d.Shutdown(context.Background())
			var bytes, rot uint64
			for _, s := range d.Stats() {
				bytes += s.Bytes
				rot += s.Rotations
			}
			el := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N*100)/el, "lines/s")
			b.ReportMetric(float64(bytes)/el/1e6, "MB/s")
			b.ReportMetric(float64(rot), "rotations")
		})
	}
}

// A failed write is classified with the error's text; the driver declares
// that it writes log lines.
func TestFailuresCarryTheirMessage(t *testing.T) {
	d := newDriver(t, nil)
	d.Shutdown(context.Background())
	o := d.Send(context.Background(), &pipebench.Batch{Body: []byte("x\n"), Count: 1})
	if o.Class != pipebench.ClassError || o.Detail != "file closed" || o.Message == "" || o.Unreached {
		t.Errorf("a send after Shutdown: %+v", o)
	}
	o = writeError(&os.PathError{Op: "write", Path: "/x/producer-0.log", Err: syscall.ENOSPC})
	if o.Detail != "disk full" || !strings.Contains(o.Message, "producer-0.log") {
		t.Errorf("a full disk: %+v", o)
	}
	if f := Factory(); len(f.Accepts) != 1 || f.Accepts[0] != pipebench.PayloadLogLines {
		t.Errorf("logfile accepts %v", f.Accepts)
	}
}
