// Package httpbody sends a request and reads its whole answer, bounded:
// what the observers that poll an HTTP API (effects, Prometheus queries)
// do before they look at the status and parse the body.
package httpbody

import (
	"io"
	"net/http"
)

// Read sends req with client and reads the answer's body, up to limit
// bytes (what lies beyond is left unread, so a parser then sees a cut
// document), and closes it. The status is the caller's to judge: resp is
// returned with the body whatever its code, its Body already closed.
func Read(client *http.Client, req *http.Request, limit int64) (*http.Response, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, nil, err
	}
	return resp, body, nil
}
