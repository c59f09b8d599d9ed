package natsattach

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPostAndDecode(t *testing.T) {
	got := make(chan Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := Decode(r.Body)
		if err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		got <- req
	}))
	defer srv.Close()
	want := Request{URL: "nats://127.0.0.1:4222", Stream: "EVENTS"}
	if err := Post(context.Background(), srv.URL+Path, want); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r != want {
		t.Errorf("got %+v", r)
	}
	err := Post(context.Background(), srv.URL+Path, Request{Stream: "EVENTS"})
	if err == nil || !strings.Contains(err.Error(), "refused to attach (HTTP 400)") {
		t.Errorf("a request without a url: %v", err)
	}
}
