// Package natsattach is the small protocol by which an embedded NATS
// system under test (sut/jetstream, sut/eventproxy) tells a waiting nats
// sink where to consume: the runner starts the sink before the system,
// so the sink listens on Path and the system posts a Request there once
// its stream exists. The sink and the systems share only this package.
package natsattach

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pipebench/pipebench/internal/conn/httpserve"
)

// Path is where a waiting nats sink listens for a Request.
const Path = "/pipebench/nats-attach"

// Request says where to consume: a nats:// URL (several comma-separated)
// and the stream.
type Request struct {
	URL    string `json:"url"`
	Stream string `json:"stream"`
}

// Post sends r to the sink's attach endpoint, waiting at most 30 s, and
// returns an error naming the sink when it does not accept it.
func Post(ctx context.Context, endpoint string, r Request) error {
	body, _ := json.Marshal(r)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the sink's endpoint %q: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("tell the sink where to consume: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		b.ReadFrom(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("the sink at %s refused to attach (HTTP %d): %s", endpoint, resp.StatusCode, strings.TrimSpace(b.String()))
	}
	return nil
}

// Decode reads a Request from a posted body (at most 64 KiB); it must
// name a URL.
func Decode(body io.Reader) (Request, error) {
	var r Request
	if err := json.NewDecoder(io.LimitReader(body, 1<<16)).Decode(&r); err != nil {
		return r, err
	}
	if r.URL == "" {
		return r, fmt.Errorf("no url")
	}
	return r, nil
}

// Listen serves, on addr (host:port), a waiting sink's attach endpoint at
// path: a posted Request is passed to attach with its URL and stream; a
// body that is not one is answered 400 with usage (the form to post), a
// failed attach 500 with its error, an attached sink 204.
func Listen(addr, path, usage string, attach func(ctx context.Context, url, stream string) error) (*httpserve.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		a, err := Decode(r.Body)
		if err != nil {
			http.Error(w, usage, http.StatusBadRequest)
			return
		}
		if err := attach(r.Context(), a.URL, a.Stream); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return httpserve.Listen(addr, mux)
}
