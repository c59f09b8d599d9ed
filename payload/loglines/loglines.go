// Package loglines generates flog-like log lines, for pipelines that tail
// files (Fluent Bit, Vector, the OpenTelemetry filelog receiver): Apache
// common and combined access logs, JSON access logs and RFC 5424 syslog.
//
// Every line carries its sequence number and send time (unix nanoseconds)
// where that format would naturally hold them, so a sink can match it:
//
//	apache_common    1.2.3.4 - - [02/Jan/2006:15:04:05 +0000] "GET /a/b?pb_seq=42&pb_sent=1700000000000000000 HTTP/1.1" 200 512
//	apache_combined  ... the same ... "https://www.x.com/y" "Mozilla/5.0 ..."
//	json             {"host":"1.2.3.4",...,"pb_seq":42,"pb_sent":"1700000000000000000"}
//	syslog           <165>1 2006-01-02T15:04:05.000000Z host app 123 ID7 [pb@32473 pb_seq="42" pb_sent="1700000000000000000"] msg
//
// Extract finds the two numbers again in any of these, including after a
// pipeline has wrapped the line in JSON (escaped quotes) or parsed it into
// fields. The rest of each line is derived from its sequence number, so a
// run is reproducible. Generators do no I/O.
package loglines

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// The formats.
const (
	FormatApacheCommon   = "apache_common"
	FormatApacheCombined = "apache_combined"
	FormatJSON           = "json"
	FormatSyslog         = "syslog" // RFC 5424
)

// Formats lists every format.
var Formats = []string{FormatApacheCommon, FormatApacheCombined, FormatJSON, FormatSyslog}

// Config configures the "loglines" generator.
type Config struct {
	// Format is apache_common, apache_combined, json or syslog (RFC 5424).
	Format string `yaml:"format" json:"format"`
	// Size is the length in bytes of every line, newline excluded; lines
	// are padded with filler text in a field natural to the format. 0
	// leaves them at their natural length (about 100 to 250 bytes). A
	// line is never cut, so a Size below the natural length is a minimum
	// that is not reached.
	Size int `yaml:"size" json:"size"`
}

// DefaultConfig returns apache_common lines of natural length.
func DefaultConfig() *Config { return &Config{Format: FormatApacheCommon} }

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	switch c.Format {
	case FormatApacheCommon, FormatApacheCombined, FormatJSON, FormatSyslog:
	default:
		errs = append(errs, fmt.Errorf("format: %q is not apache_common, apache_combined, json or syslog", c.Format))
	}
	if c.Size < 0 || c.Size > 1<<20 {
		errs = append(errs, fmt.Errorf("size: %d is outside 0..1048576 bytes", c.Size))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "loglines" generator.
func Factory() pipebench.Factory[pipebench.Generator] {
	return pipebench.NewFactory("loglines", "flog-like log lines (apache_common, apache_combined, json, syslog) carrying pb_seq and pb_sent", DefaultConfig,
		func(c *Config, _ pipebench.Env) (pipebench.Generator, error) { return New(*c) },
	).WithPayloads([]pipebench.Payload{pipebench.PayloadLogLines, pipebench.PayloadBytes}, nil)
}

// Generator builds batches of newline-terminated lines. It is safe for
// concurrent use.
type Generator struct {
	format int
	size   int
}

var _ pipebench.Generator = (*Generator)(nil)
var _ pipebench.Releaser = (*Generator)(nil)

const (
	fCommon = iota
	fCombined
	fJSON
	fSyslog
)

// New returns a generator for cfg.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{size: cfg.Size}
	switch cfg.Format {
	case FormatApacheCombined:
		g.format = fCombined
	case FormatJSON:
		g.format = fJSON
	case FormatSyslog:
		g.format = fSyslog
	}
	return g, nil
}

// ItemName says what one item is.
func (g *Generator) ItemName() string { return "line" }

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Next implements pipebench.Generator: count lines, seq..seq+count-1, all
// stamped with at.
func (g *Generator) Next(seq uint64, count int, at time.Time) pipebench.Batch {
	if count < 1 {
		count = 1
	}
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	var tsBuf [40]byte
	ts := g.stamp(tsBuf[:0], at)
	sent := at.UnixNano()
	for i := 0; i < count; i++ {
		b = g.line(b, seq+uint64(i), sent, ts)
		b = append(b, '\n')
	}
	*bp = b
	return pipebench.Batch{Seq: seq, Count: count, Scheduled: at, ContentType: "text/plain", Body: b, Data: bp}
}

// Release implements pipebench.Releaser: the body goes back to the pool.
func (g *Generator) Release(b *pipebench.Batch) {
	if bp, ok := b.Data.(*[]byte); ok && cap(*bp) <= 4<<20 {
		bufPool.Put(bp)
	}
	b.Body, b.Data = nil, nil
}

// Line appends one line (without its newline) to b.
func (g *Generator) Line(b []byte, seq uint64, at time.Time) []byte {
	var tsBuf [40]byte
	return g.line(b, seq, at.UnixNano(), g.stamp(tsBuf[:0], at))
}

func (g *Generator) stamp(b []byte, at time.Time) []byte {
	at = at.UTC()
	switch g.format {
	case fSyslog:
		return at.AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	default:
		return at.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	}
}

func (g *Generator) line(b []byte, seq uint64, sent int64, ts []byte) []byte {
	start := len(b)
	h := mix(seq)
	switch g.format {
	case fCommon, fCombined:
		b = appendIP(b, h)
		b = append(b, " - "...)
		b = append(b, pick(users, h>>8)...)
		b = append(b, " ["...)
		b = append(b, ts...)
		b = append(b, `] "`...)
		b = append(b, pick(methods, h>>12)...)
		b = append(b, ' ')
		b = appendPath(b, h>>16)
		b = append(b, "?pb_seq="...)
		b = strconv.AppendUint(b, seq, 10)
		b = append(b, "&pb_sent="...)
		b = strconv.AppendInt(b, sent, 10)
		var tail [256]byte
		t := tail[:0]
		t = append(t, ' ')
		t = append(t, pick(protocols, h>>24)...)
		t = append(t, `" `...)
		t = append(t, pick(statuses, h>>28)...)
		t = append(t, ' ')
		t = strconv.AppendUint(t, h>>36%50000, 10)
		if g.format == fCombined {
			t = append(t, ` "https://www.`...)
			t = append(t, pick(words, h>>40)...)
			t = append(t, ".com/"...)
			t = append(t, pick(words, h>>44)...)
			t = append(t, `" "`...)
			t = append(t, pick(agents, h>>48)...)
			t = append(t, '"')
		}
		b = g.pad(b, start, "&q=", "", t, fillerQuery)
	case fJSON:
		b = append(b, `{"host":"`...)
		b = appendIP(b, h)
		b = append(b, `","user-identifier":"`...)
		b = append(b, pick(users, h>>8)...)
		b = append(b, `","datetime":"`...)
		b = append(b, ts...)
		b = append(b, `","method":"`...)
		b = append(b, pick(methods, h>>12)...)
		b = append(b, `","request":"`...)
		b = appendPath(b, h>>16)
		b = append(b, `","protocol":"`...)
		b = append(b, pick(protocols, h>>24)...)
		b = append(b, `","status":`...)
		b = append(b, pick(statuses, h>>28)...)
		b = append(b, `,"bytes":`...)
		b = strconv.AppendUint(b, h>>36%50000, 10)
		b = append(b, `,"referer":"https://www.`...)
		b = append(b, pick(words, h>>40)...)
		b = append(b, ".com/"...)
		b = append(b, pick(words, h>>44)...)
		b = append(b, `","pb_seq":`...)
		b = strconv.AppendUint(b, seq, 10)
		b = append(b, `,"pb_sent":"`...)
		b = strconv.AppendInt(b, sent, 10)
		b = append(b, '"')
		b = g.pad(b, start, `,"message":"`, `"`, []byte(`}`), filler)
	case fSyslog:
		b = append(b, '<')
		b = strconv.AppendUint(b, (h>>8)%24*8+(h>>13)%8, 10)
		b = append(b, ">1 "...)
		b = append(b, ts...)
		b = append(b, " host-"...)
		b = strconv.AppendUint(b, (h>>16)%64, 10)
		b = append(b, ' ')
		b = append(b, pick(apps, h>>22)...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, 100+(h>>26)%32000, 10)
		b = append(b, " ID"...)
		b = strconv.AppendUint(b, (h>>41)%1000, 10)
		b = append(b, ` [pb@32473 pb_seq="`...)
		b = strconv.AppendUint(b, seq, 10)
		b = append(b, `" pb_sent="`...)
		b = strconv.AppendInt(b, sent, 10)
		b = append(b, `"] `...)
		b = append(b, pick(verbs, h>>51)...)
		b = append(b, " the "...)
		b = append(b, pick(words, h>>55)...)
		b = append(b, ' ')
		b = append(b, pick(nouns, h>>59)...)
		b = g.pad(b, start, " ", "", nil, filler)
	}
	return b
}

// pad appends open, filler, end and tail so that the line started at start
// is g.size bytes long; when there is no room for filler it appends just the
// tail.
func (g *Generator) pad(b []byte, start int, open, end string, tail, filler []byte) []byte {
	if g.size > 0 {
		n := g.size - (len(b) - start) - len(open) - len(end) - len(tail)
		if n > 0 {
			b = append(b, open...)
			off := int(uint(len(b)) % uint(len(filler)-64))
			for n > 0 {
				c := min(n, len(filler)-off)
				b = append(b, filler[off:off+c]...)
				n -= c
				off = 0
			}
			b = append(b, end...)
		}
	}
	return append(b, tail...)
}

// filler is lowercase words and spaces, without digits, underscores or
// quotes; fillerQuery is the same with '+' for spaces, for a query string.
var filler, fillerQuery = func() ([]byte, []byte) {
	var b []byte
	x := uint64(1)
	for len(b) < 8192 {
		x = mix(x)
		b = append(b, pick(words, x)...)
		b = append(b, ' ')
	}
	q := bytes.ReplaceAll(b, []byte(" "), []byte("+"))
	return b, q
}()

func appendIP(b []byte, h uint64) []byte {
	b = strconv.AppendUint(b, 1+h%223, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, (h>>8)%256, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, (h>>16)%256, 10)
	b = append(b, '.')
	return strconv.AppendUint(b, 1+(h>>24)%254, 10)
}

func appendPath(b []byte, h uint64) []byte {
	b = append(b, '/')
	b = append(b, pick(words, h)...)
	b = append(b, '/')
	b = append(b, pick(nouns, h>>5)...)
	if h&0x300 == 0 {
		b = append(b, '/')
		b = append(b, pick(words, h>>10)...)
	}
	return b
}

func mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

func pick(list []string, h uint64) string { return list[h%uint64(len(list))] }

var (
	users     = []string{"-", "-", "-", "-", "frank", "mia", "ops", "deploy"}
	methods   = []string{"GET", "GET", "GET", "GET", "POST", "POST", "PUT", "DELETE", "PATCH", "HEAD"}
	protocols = []string{"HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0"}
	statuses  = []string{"200", "200", "200", "200", "200", "201", "204", "301", "302", "304", "400", "401", "403", "404", "404", "500", "502", "503"}
	apps      = []string{"nginx", "sshd", "cron", "kernel", "postfix", "systemd", "dockerd", "app"}
	words     = []string{"synergy", "bandwidth", "paradigm", "portal", "infrastructure", "metrics", "vertical", "leverage",
		"seamless", "scalable", "robust", "cloud", "mesh", "streamline", "integrate", "dynamic", "holistic", "virtual",
		"granular", "agile", "frictionless", "proactive", "turnkey", "viral", "intuitive", "global", "mission", "critical"}
	nouns = []string{"users", "markets", "systems", "platforms", "models", "channels", "networks", "schemas",
		"deliverables", "interfaces", "solutions", "partnerships", "niches", "portals", "metrics", "communities"}
	verbs = []string{"reinvent", "deploy", "orchestrate", "synthesize", "aggregate", "optimize", "enable", "monetize",
		"transform", "harness", "incubate", "scale", "benchmark", "engage", "envision", "iterate"}
	agents = []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
		"curl/8.8.0",
		"Go-http-client/1.1",
		"Prometheus/2.53.0",
		"python-requests/2.32.3",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
	}
)
