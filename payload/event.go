// Package payload holds the generators of HTTP payloads (JSON events and
// CloudEvents) and Extract, which reads sequence numbers and send times back
// out of a request. Generators do no I/O.
//
// The wire convention: every request carries `Pipebench-Count: N`. In header
// mode, `Pipebench-Seq` (first sequence number) and `Pipebench-Sent` (unix
// nanoseconds) are headers; in field mode each JSON object carries
// "pb_seq" and "pb_sent" (a decimal string of unix nanoseconds). CloudEvents
// carry the extension attributes pbseq and pbsent (ce-pbseq, ce-pbsent in
// binary mode).
package payload

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// Header names of the wire convention.
const (
	HeaderSeq   = "Pipebench-Seq"
	HeaderSent  = "Pipebench-Sent"
	HeaderCount = "Pipebench-Count"
)

// EventConfig configures the "event" generator.
type EventConfig struct {
	// Size is the approximate size in bytes of one event's JSON object,
	// padding included.
	Size int `yaml:"size" json:"size"`
	// SeqIn is where the sequence number travels: "header" or "field".
	SeqIn string `yaml:"seq_in" json:"seq_in"`
	// Fields are extra JSON fields, each a template ({{seq}}, {{seq % 100}},
	// {{rand 1000}}, {{choice eu us}}, {{uuid}}, {{now}}).
	Fields map[string]string `yaml:"fields" json:"fields,omitempty"`
	// ContentType of the request (default application/json).
	ContentType string `yaml:"content_type" json:"content_type"`
}

// Validate reports every problem, each prefixed with its key.
func (c *EventConfig) Validate() error {
	var errs []error
	if c.Size < 0 || c.Size > 16<<20 {
		errs = append(errs, fmt.Errorf("size: %d is outside 0..16777216 bytes", c.Size))
	}
	if c.SeqIn != "header" && c.SeqIn != "field" {
		errs = append(errs, fmt.Errorf("seq_in: %q is not header or field", c.SeqIn))
	}
	errs = append(errs, fieldErrors(c.Fields)...)
	return errors.Join(errs...)
}

// EventFactory returns the factory of the "event" generator: JSON events.
func EventFactory() pipebench.Factory[pipebench.Generator] {
	return pipebench.NewFactory("event", "JSON events; sequence number in a header or a field",
		func() *EventConfig { return &EventConfig{Size: 256, SeqIn: "header", ContentType: "application/json"} },
		func(c *EventConfig, _ pipebench.Env) (pipebench.Generator, error) {
			return newJSON(c.Size, c.Fields, c.SeqIn == "field", c.ContentType, nil)
		}).WithPayloads([]pipebench.Payload{pipebench.PayloadBytes}, nil)
}

// field is one compiled templated field.
type field struct {
	key  string
	tmpl template
}

func compileFields(m map[string]string) ([]field, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]field, 0, len(keys))
	for _, k := range keys {
		t, err := compileTemplate(m[k])
		if err != nil {
			return nil, fmt.Errorf("fields: %s: %w", k, err)
		}
		out = append(out, field{key: k, tmpl: t})
	}
	return out, nil
}

// eventBuf is what one batch of events is made in: the body, the
// headers, and the header values' bytes. They are pooled (eventBufs) and
// handed back by Release, so a batch allocates one string (its header
// values) once the pool is warm.
type eventBuf struct {
	body []byte
	vals []byte
	hdrs [3]pipebench.Header
	// ends are where each event of an array body ends (the next starts
	// one byte after, past the comma): Items hands a driver that sends
	// each event on its own the events without scanning the body for
	// them. Empty for a body that is not an array of events.
	ends []int
}

var eventBufs = sync.Pool{New: func() any { return &eventBuf{body: make([]byte, 0, 1024), vals: make([]byte, 0, 64)} }}

// stamp returns a batch's headers of the wire convention, in e:
// Pipebench-Count, and with withSeq Pipebench-Seq and Pipebench-Sent; and
// the send time as the convention writes it. One string holds the values
// (drivers and their libraries may keep a header's value: an HTTP/2
// encoder's table does).
func (e *eventBuf) stamp(seq uint64, count int, at time.Time, withSeq bool) ([]pipebench.Header, string) {
	v := strconv.AppendInt(e.vals[:0], at.UnixNano(), 10)
	nSent := len(v)
	v = strconv.AppendInt(v, int64(count), 10)
	nCount := len(v)
	v = strconv.AppendUint(v, seq, 10)
	e.vals = v
	vals := string(v)
	hdr := append(e.hdrs[:0], pipebench.Header{Name: HeaderCount, Value: vals[nSent:nCount]})
	if withSeq {
		hdr = append(hdr, pipebench.Header{Name: HeaderSeq, Value: vals[nCount:]}, pipebench.Header{Name: HeaderSent, Value: vals[:nSent]})
	}
	return hdr, vals[:nSent]
}

// getBuf takes an eventBuf from the pool with its body emptied, for a
// batch to be made in; releaseBuf puts it back.
func getBuf() (*eventBuf, []byte) {
	e := eventBufs.Get().(*eventBuf)
	e.ends = e.ends[:0]
	return e, e.body[:0]
}

// Items returns the events of b, a batch the event generator made as a
// JSON array of Count events, as slices of its body (appended to out[:0]),
// as a driver that sends each event as a message of its own splits it
// (jsonsplit.Array gives the same slices, scanning for them): nil when
// the generator did not make b so. The slices are valid while b is.
func Items(b *pipebench.Batch, out [][]byte) [][]byte {
	e, ok := b.Data.(*eventBuf)
	if !ok || len(e.ends) != b.Count || b.Count < 2 || len(e.body) == 0 || len(b.Body) != len(e.body) || &b.Body[0] != &e.body[0] {
		return nil
	}
	out = out[:0]
	start := 1 // past the '['
	for _, end := range e.ends {
		out = append(out, b.Body[start:end])
		start = end + 1 // past the ','
	}
	return out
}

// releaseBuf implements pipebench.Releaser for the generators that make
// their batches in an eventBuf.
func releaseBuf(b *pipebench.Batch) {
	if e, ok := b.Data.(*eventBuf); ok && cap(e.body) <= 1<<20 {
		eventBufs.Put(e)
	}
	b.Body, b.Data, b.Headers = nil, nil, nil
}

// jsonGen builds JSON events, alone or as an array. It is safe for
// concurrent use.
type jsonGen struct {
	size        int
	fields      []field
	inBody      bool   // seq in the body (field mode) rather than headers
	contentType string // per request
	ce          *ceConfig
}

var _ pipebench.Generator = (*jsonGen)(nil)
var _ pipebench.Releaser = (*jsonGen)(nil)

func newJSON(size int, fields map[string]string, inBody bool, contentType string, ce *ceConfig) (*jsonGen, error) {
	fs, err := compileFields(fields)
	if err != nil {
		return nil, err
	}
	return &jsonGen{size: size, fields: fs, inBody: inBody, contentType: contentType, ce: ce}, nil
}

// ItemName says what one item is.
func (g *jsonGen) ItemName() string { return "event" }

// Next implements pipebench.Generator. The batch's body stays valid until
// Release.
func (g *jsonGen) Next(seq uint64, count int, at time.Time) pipebench.Batch {
	count = max(count, 1) // a batch holds one item at least
	e, b := getBuf()
	hdr, sent := e.stamp(seq, count, at, g.ce == nil && !g.inBody)
	batch := pipebench.Batch{Seq: seq, Count: count, Scheduled: at, ContentType: g.contentType}
	switch {
	case g.ce != nil && g.ce.binary && count == 1:
		hdr = append(hdr, g.ce.headers(seq, sent, at)...)
		b = g.object(b, seq, at, sent, nil)
	case g.ce != nil:
		if count > 1 {
			batch.ContentType = "application/cloudevents-batch+json"
			b = append(b, '[')
		} else {
			batch.ContentType = "application/cloudevents+json"
		}
		for i := 0; i < count; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = g.ce.envelope(b, seq+uint64(i), sent, at, func(b []byte) []byte { return g.object(b, seq+uint64(i), at, sent, nil) })
		}
		if count > 1 {
			b = append(b, ']')
		}
	default:
		if count > 1 {
			b = append(b, '[')
		}
		var d decimal
		if g.inBody {
			d.set(seq)
		}
		for i := 0; i < count; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var digits []byte
			if g.inBody {
				if i > 0 {
					d.inc()
				}
				digits = d.digits()
			}
			b = g.object(b, seq+uint64(i), at, sent, digits)
			if count > 1 {
				e.ends = append(e.ends, len(b))
			}
		}
		if count > 1 {
			b = append(b, ']')
		}
	}
	e.body = b
	batch.Body = b
	batch.Headers = hdr
	batch.Data = e
	return batch
}

// Release implements pipebench.Releaser: the body and headers go back to
// the pool.
func (g *jsonGen) Release(b *pipebench.Batch) { releaseBuf(b) }

// object appends one event object, padded to the configured size.
func (g *jsonGen) object(b []byte, seq uint64, at time.Time, sent string, seqDigits []byte) []byte {
	start := len(b)
	b = append(b, '{')
	if seqDigits != nil {
		b = append(b, `"pb_seq":`...)
		b = append(b, seqDigits...)
		b = append(b, `,"pb_sent":"`...)
		b = append(b, sent...)
		b = append(b, `",`...)
	}
	for _, f := range g.fields {
		b = appendJSONString(b, f.key)
		b = append(b, ':')
		mark := len(b)
		b = f.tmpl.appendTo(b, seq, at)
		val := append([]byte(nil), b[mark:]...)
		b = appendJSONString(b[:mark], string(val))
		b = append(b, ',')
	}
	b = append(b, `"data":"`...)
	for pad := g.size - (len(b) - start) - 2; pad > 0; pad -= len(padding) {
		b = append(b, padding[:min(pad, len(padding))]...)
	}
	return append(b, `"}`...)
}

// decimal is a sequence number's decimal digits, counted up in place: the
// events of a batch have consecutive numbers, and adding one to the digits
// costs less than formatting each number anew.
type decimal struct {
	buf [24]byte
	at  int // the digits are buf[at:]
}

func (d *decimal) set(v uint64) {
	var tmp [20]byte
	s := strconv.AppendUint(tmp[:0], v, 10)
	d.at = len(d.buf) - len(s)
	copy(d.buf[d.at:], s)
}

func (d *decimal) digits() []byte { return d.buf[d.at:] }

func (d *decimal) inc() {
	for i := len(d.buf) - 1; i >= d.at; i-- {
		if d.buf[i] < '9' {
			d.buf[i]++
			return
		}
		d.buf[i] = '0'
	}
	d.at--
	d.buf[d.at] = '1'
}

// padding pads events to their size.
const padding = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
