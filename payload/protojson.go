package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/pipebench/pipebench"
)

// PayloadProtoJSON is a Batch whose Body holds Count protobuf messages in
// their canonical JSON form (protojson), one per line, the first carrying
// sequence number Seq. The headers Pipebench-Seq, Pipebench-Sent and
// Pipebench-Count travel with it. The gRPC driver accepts it and encodes each
// line as the request message of the method it calls.
const PayloadProtoJSON pipebench.Payload = "proto-json"

// MessageConfig configures the "grpc-message" generator.
type MessageConfig struct {
	// Message is the request message as a YAML tree in protojson form
	// (field names as in the .proto or in lowerCamelCase; enums by name;
	// timestamps as RFC 3339 strings; 64-bit integers may be strings).
	// Every string is a template: {{seq}}, {{seq % N}} (a pool of N
	// names), {{rand N}}, {{choice A B}}, {{uuid}}, {{now}}.
	Message map[string]any `yaml:"message" json:"message"`
}

// Validate reports every problem, each prefixed with its key.
func (c *MessageConfig) Validate() error {
	if len(c.Message) == 0 {
		return errors.New(`message: give the request message's fields, like {node_name: "node-{{seq % 100}}", sequence: "{{seq}}"}`)
	}
	_, err := compileMessage(c.Message)
	return err
}

// MessageFactory returns the factory of the "grpc-message" generator:
// protobuf request messages in JSON form, filled per item from a template.
func MessageFactory() pipebench.Factory[pipebench.Generator] {
	return pipebench.NewFactory("grpc-message", "protobuf request messages (protojson) filled per event from a template; for the grpc driver",
		func() *MessageConfig { return &MessageConfig{} },
		func(c *MessageConfig, _ pipebench.Env) (pipebench.Generator, error) {
			return NewMessage(c.Message)
		}).WithPayloads([]pipebench.Payload{PayloadProtoJSON}, nil)
}

// msgPiece is one compiled piece of a message document: literal JSON text,
// or a template whose output is written as a JSON string.
type msgPiece struct {
	lit  string
	tmpl *template
}

// MessageGen builds protojson messages from a template. It is safe for
// concurrent use.
type MessageGen struct {
	pieces []msgPiece
}

var _ pipebench.Generator = (*MessageGen)(nil)
var _ pipebench.Releaser = (*MessageGen)(nil)

// NewMessage compiles the message template tree (maps, lists, strings
// holding templates, numbers, booleans).
func NewMessage(tree map[string]any) (*MessageGen, error) {
	pieces, err := compileMessage(tree)
	if err != nil {
		return nil, err
	}
	return &MessageGen{pieces: pieces}, nil
}

func compileMessage(tree map[string]any) ([]msgPiece, error) {
	c := &msgCompiler{}
	if err := c.value("message", tree); err != nil {
		return nil, err
	}
	c.flush()
	return c.out, nil
}

type msgCompiler struct {
	out []msgPiece
	lit []byte
}

func (c *msgCompiler) flush() {
	if len(c.lit) > 0 {
		c.out = append(c.out, msgPiece{lit: string(c.lit)})
		c.lit = c.lit[:0]
	}
}

func (c *msgCompiler) value(path string, v any) error {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		c.lit = append(c.lit, '{')
		for i, k := range keys {
			if i > 0 {
				c.lit = append(c.lit, ',')
			}
			c.lit = appendJSONString(c.lit, k)
			c.lit = append(c.lit, ':')
			if err := c.value(path+"."+k, v[k]); err != nil {
				return err
			}
		}
		c.lit = append(c.lit, '}')
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = x
		}
		return c.value(path, m)
	case []any:
		c.lit = append(c.lit, '[')
		for i, x := range v {
			if i > 0 {
				c.lit = append(c.lit, ',')
			}
			if err := c.value(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
				return err
			}
		}
		c.lit = append(c.lit, ']')
	case string:
		t, err := compileTemplate(v)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(t.parts) <= 1 && (len(t.parts) == 0 || t.parts[0].fn == "") {
			c.lit = appendJSONString(c.lit, v)
			return nil
		}
		c.flush()
		c.out = append(c.out, msgPiece{tmpl: &t})
	case nil, bool, int, int64, uint64, float64, uint, int32, uint32, float32:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		c.lit = append(c.lit, b...)
	default:
		return fmt.Errorf("%s: a %T cannot be a message field value: use a string, number, boolean, list or map", path, v)
	}
	return nil
}

// ItemName says what one item is.
func (g *MessageGen) ItemName() string { return "message" }

// Next implements pipebench.Generator: Count messages, one per line.
func (g *MessageGen) Next(seq uint64, count int, at time.Time) pipebench.Batch {
	count = max(count, 1) // a batch holds one item at least
	e, b := getBuf()
	var scratch [128]byte
	for i := 0; i < count; i++ {
		if i > 0 {
			b = append(b, '\n')
		}
		for _, p := range g.pieces {
			if p.tmpl == nil {
				b = append(b, p.lit...)
				continue
			}
			s := p.tmpl.appendTo(scratch[:0], seq+uint64(i), at)
			b = appendJSONString(b, string(s))
		}
	}
	e.body = b
	hdr, _ := e.stamp(seq, count, at, true)
	return pipebench.Batch{Seq: seq, Count: count, Scheduled: at, ContentType: "application/json", Headers: hdr, Body: b, Data: e}
}

// Release implements pipebench.Releaser: the body goes back to the pool.
func (g *MessageGen) Release(b *pipebench.Batch) { releaseBuf(b) }
