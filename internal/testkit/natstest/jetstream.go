package natstest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench/internal/conn/natsattach"
)

// JetStream connects to the server at url (several comma-separated) with
// opts and returns the connection and its JetStream context; it fails the
// test when it cannot connect, and closes the connection when the test
// ends.
func JetStream(tb testing.TB, url string, opts ...nats.Option) (*nats.Conn, js.JetStream) {
	tb.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	j, _ := js.New(nc)
	return nc, j
}

// StreamInfo returns the stream's information as the server at url tells
// it (within 10 s), on a connection of its own that it closes; it fails
// the test when it cannot.
func StreamInfo(tb testing.TB, url, stream string) *js.StreamInfo {
	tb.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer nc.Close()
	j, _ := js.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := j.Stream(ctx, stream)
	if err != nil {
		tb.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return info
}

// TellsOnlyANATSSink checks what an embedded NATS system under test
// tells a waiting nats sink: start is called with a target that is not a
// sink's attach endpoint, then with one (it starts the system and sees to
// its stop); the system must post the sink its nats:// URL on loopback
// and stream once, and post nothing to the other target.
func TellsOnlyANATSSink(t *testing.T, stream string, start func(target string)) {
	t.Helper()
	got := make(chan natsattach.Request, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a natsattach.Request
		json.NewDecoder(r.Body).Decode(&a)
		got <- a
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	start(srv.URL + "/events")
	start(srv.URL + natsattach.Path)
	select {
	case a := <-got:
		if !strings.HasPrefix(a.URL, "nats://127.0.0.1:") || a.Stream != stream {
			t.Errorf("attach %+v", a)
		}
	default:
		t.Fatal("the nats sink was not told")
	}
	if len(got) != 0 {
		t.Error("a target that is not a nats sink was posted to")
	}
}
