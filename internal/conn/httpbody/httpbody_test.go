package httpbody

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The body comes back whatever the status, cut at the limit.
func TestReadReturnsTheBodyUpToTheLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte(strings.Repeat("x", 100)))
	}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, body, err := Read(srv.Client(), req, 10)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTeapot || string(body) != strings.Repeat("x", 10) {
		t.Errorf("status %d, body %q; want 418 and the first 10 bytes", resp.StatusCode, body)
	}
}

// A request that reaches no server is the client's error.
func TestReadOfAnUnreachableServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Read(http.DefaultClient, req, 10); err == nil {
		t.Error("no error from a closed server")
	}
}
