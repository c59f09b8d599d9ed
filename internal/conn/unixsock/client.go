package unixsock

import (
	"context"
	"net"
	"net/http"
	"time"
)

// HTTPClient returns an HTTP client that sends every request to the Unix
// socket at path, whatever host its URL names, and gives up on a request
// after timeout: a client of a server listening on unix:///path.
func HTTPClient(path string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
}
