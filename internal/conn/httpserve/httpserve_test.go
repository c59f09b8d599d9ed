package httpserve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A served handler answers at URL until Shutdown; after it the address
// refuses, and a nil Server shuts down without error.
func TestServeAndShutdown(t *testing.T) {
	s, err := Listen("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) }))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(s.URL("/x"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "/x" || !strings.HasPrefix(s.URL("/x"), "http://127.0.0.1:") {
		t.Fatalf("%s answered %q", s.URL("/x"), b)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(s.URL("/x")); err == nil {
		t.Error("still answering after Shutdown")
	}
	var none *Server
	if none.Shutdown(context.Background()) != nil || none.Close() != nil {
		t.Error("a nil Server did not stop quietly")
	}
	if _, err := Listen("127.0.0.1:x", http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), "listen on 127.0.0.1:x") {
		t.Errorf("a bad address: %v", err)
	}
}
