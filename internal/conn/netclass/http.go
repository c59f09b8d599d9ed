package netclass

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/pipebench/pipebench"
)

// ErrPlainToTLS is a TLS server's answer to a plain-text HTTP request (its
// 400 complaint, or a TLS record where a status line was expected).
var ErrPlainToTLS = fmt.Errorf("%w: the server speaks TLS (HTTPS) and the request was plain HTTP: use an https:// address", ErrProtocolMismatch)

// StatusRules is how a protocol over HTTP reads an answer's status. Every
// protocol agrees that 2xx is ok and that 408 (request timeout) and 504
// (gateway timeout) are timeouts; they differ on which other statuses are
// backpressure, to be retried later (refused), rather than errors. The
// target answered, so no status is unreached.
type StatusRules struct {
	// Refused reports whether a status other than 2xx, 408 and 504 is a
	// refusal.
	Refused func(code int) bool
}

// The rules of the protocols pipebench drives over HTTP.
var (
	// EventStatuses: 429 (too many requests), 503 (unavailable) and 507
	// (insufficient storage: an event proxy whose stream is full).
	EventStatuses = StatusRules{Refused: func(c int) bool { return c == 429 || c == 503 || c == 507 }}
	// OTLPStatuses: the retryable statuses of the OTLP/HTTP
	// specification, 429, 502 and 503.
	OTLPStatuses = StatusRules{Refused: func(c int) bool { return c == 429 || c == 502 || c == 503 }}
	// RemoteWriteStatuses: Prometheus remote write retries 429 and every
	// 5xx; any other 4xx is dropped (an error).
	RemoteWriteStatuses = StatusRules{Refused: func(c int) bool { return c == 429 || c >= 500 }}
)

// Classify maps a status to an outcome: ok for 2xx (the status in Code
// alone); else the class by the rules, Detail the status number and
// Message "HTTP 503 Service Unavailable".
func (r StatusRules) Classify(code int) pipebench.Outcome {
	o := pipebench.Outcome{Code: code}
	switch {
	case code >= 200 && code < 300:
		return o
	case code == 408 || code == 504:
		o.Class = pipebench.ClassTimeout
	case r.Refused != nil && r.Refused(code):
		o.Class = pipebench.ClassRefused
	default:
		o.Class = pipebench.ClassError
	}
	o.Detail = strconv.Itoa(code)
	o.Message = "HTTP " + o.Detail + " " + http.StatusText(code)
	return o
}

// Response classifies a net/http client's answer by its status, after
// reading its body to the end and closing it (so that its connection is
// reused). A 400 whose body is a TLS server's complaint about a plain
// request is ErrPlainToTLS, classified (a protocol mismatch, unreached).
func (r StatusRules) Response(resp *http.Response) pipebench.Outcome {
	var head []byte
	if resp.StatusCode == 400 {
		head, _ = io.ReadAll(io.LimitReader(resp.Body, 512))
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if PlainToTLS(resp.StatusCode, head) {
		return Classify(ErrPlainToTLS)
	}
	return r.Classify(resp.StatusCode)
}
