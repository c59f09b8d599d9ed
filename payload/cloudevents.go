package payload

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pipebench/pipebench"
)

// CloudEventsConfig configures the "cloudevents" generator.
type CloudEventsConfig struct {
	// Mode is "structured" (the event is a JSON envelope) or "binary"
	// (attributes are ce-* headers, the body is the data). A batch of more
	// than one event is always sent structured, in batch mode.
	Mode   string            `yaml:"mode" json:"mode"`
	Type   string            `yaml:"type" json:"type"`
	Source string            `yaml:"source" json:"source"`
	Size   int               `yaml:"size" json:"size"`
	Fields map[string]string `yaml:"fields" json:"fields,omitempty"`
}

// Validate reports every problem, each prefixed with its key.
func (c *CloudEventsConfig) Validate() error {
	var errs []error
	if c.Mode != "structured" && c.Mode != "binary" {
		errs = append(errs, fmt.Errorf("mode: %q is not structured or binary", c.Mode))
	}
	if c.Type == "" {
		errs = append(errs, fmt.Errorf("type: must not be empty"))
	}
	if c.Source == "" {
		errs = append(errs, fmt.Errorf("source: must not be empty"))
	}
	if c.Size < 0 || c.Size > 16<<20 {
		errs = append(errs, fmt.Errorf("size: %d is outside 0..16777216 bytes", c.Size))
	}
	errs = append(errs, fieldErrors(c.Fields)...)
	return errors.Join(errs...)
}

// CloudEventsFactory returns the factory of the "cloudevents" generator.
func CloudEventsFactory() pipebench.Factory[pipebench.Generator] {
	def := func() *CloudEventsConfig {
		return &CloudEventsConfig{Mode: "structured", Type: "dev.pipebench.event", Source: "/pipebench", Size: 256}
	}
	return pipebench.NewFactory("cloudevents", "CloudEvents 1.0 over HTTP, structured or binary content mode", def,
		func(c *CloudEventsConfig, _ pipebench.Env) (pipebench.Generator, error) {
			ce := &ceConfig{binary: c.Mode == "binary", typ: c.Type, source: c.Source}
			return newJSON(c.Size, c.Fields, false, "application/json", ce)
		}).WithPayloads([]pipebench.Payload{pipebench.PayloadBytes}, nil)
}

type ceConfig struct {
	binary      bool
	typ, source string
}

// headers are the binary-mode attributes of one event.
func (c *ceConfig) headers(seq uint64, sent string, at time.Time) []pipebench.Header {
	id := strconv.FormatUint(seq, 10)
	return []pipebench.Header{
		{Name: "ce-specversion", Value: "1.0"},
		{Name: "ce-id", Value: id},
		{Name: "ce-type", Value: c.typ},
		{Name: "ce-source", Value: c.source},
		{Name: "ce-time", Value: at.UTC().Format(time.RFC3339Nano)},
		{Name: "ce-pbseq", Value: id},
		{Name: "ce-pbsent", Value: sent},
	}
}

// envelope appends one structured-mode event whose data data appends.
func (c *ceConfig) envelope(b []byte, seq uint64, sent string, at time.Time, data func([]byte) []byte) []byte {
	b = append(b, `{"specversion":"1.0","id":"`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `","type":`...)
	b = appendJSONString(b, c.typ)
	b = append(b, `,"source":`...)
	b = appendJSONString(b, c.source)
	b = append(b, `,"time":"`...)
	b = at.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","datacontenttype":"application/json","pbseq":"`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `","pbsent":"`...)
	b = append(b, sent...)
	b = append(b, `","data":`...)
	b = data(b)
	return append(b, '}')
}
