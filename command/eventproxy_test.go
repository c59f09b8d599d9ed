package command

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pipebench/pipebench"
)

func runResult(t *testing.T, args ...string) pipebench.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	stdout, stderr, code := cli(t, append(args, "--quiet", "--out", out)...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return readResult(t, out)
}

// readResult reads the Result file path, failing the test when it cannot.
func readResult(t *testing.T, path string) pipebench.Result {
	t.Helper()
	res, err := pipebench.ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	return *res
}

func total(t *testing.T, res pipebench.Result, name string, labels ...string) float64 {
	t.Helper()
	v, ok := res.Total.Get(name, labels...)
	if !ok {
		t.Fatalf("no total %s %v", name, labels)
	}
	return v
}

// The built-in eventing-proxy scenario runs end to end, CloudEvents over
// HTTP through the proxy into JetStream and out to the durable consumer,
// and the counts reconcile exactly: what the driver had acknowledged is
// what the proxy published, what the stream stored and what the sink got.
func TestEventingProxyBuiltinReconciles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario for several seconds")
	}
	res := runResult(t, "run", "builtin:eventing-proxy", "--duration", "4s")
	if res.Manifest.Status != pipebench.StatusPassed {
		t.Errorf("status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
	sent, accepted, delivered := total(t, res, "sent"), total(t, res, "accepted"), total(t, res, "delivered")
	refused := total(t, res, "errors", "class", "refused")
	published := total(t, res, "exporter_sent.total", "instance", "eventproxy-0")
	stored := total(t, res, "stream_last_seq.total", "instance", "eventproxy-0", "stream", "EVENTS")
	if accepted == 0 || accepted+refused != sent || published != accepted || stored != accepted || delivered != accepted {
		t.Errorf("sent %v = accepted %v + refused %v; published %v, stored %v, delivered %v should all be the accepted count",
			sent, accepted, refused, published, stored, delivered)
	}
	if lost := total(t, res, "lost"); lost != 0 {
		t.Errorf("%v lost", lost)
	}
}

const fullStream = `name: eventproxy-full
sut:
  type: eventproxy
  stream: {name: EVENTS, max_msgs: 200, discard: new, storage: memory}
target: {driver: http, connections: 4}
workload: {generator: cloudevents, mode: binary}
sink: {type: nats, durable: pipebench}
observers:
  - {type: prometheus, preset: eventproxy}
interval: 1s
drain: 5s
phases:
  - {name: fill, duration: 1s, rate: 400/s}
`

// A full stream: the proxy answers 507, which pipebench counts as refused
// (the target answered), exactly beyond the stream's 200 messages.
func TestEventProxyFullStreamIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario")
	}
	path := filepath.Join(t.TempDir(), "full.yaml")
	if err := os.WriteFile(path, []byte(fullStream), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runResult(t, "run", path)
	sent, accepted, delivered := total(t, res, "sent"), total(t, res, "accepted"), total(t, res, "delivered")
	refused := total(t, res, "errors", "class", "refused")
	if accepted != 200 || delivered != 200 || refused != sent-200 || refused == 0 {
		t.Errorf("sent %v accepted %v refused %v delivered %v; want 200 accepted and delivered, the rest refused", sent, accepted, refused, delivered)
	}
	if other := total(t, res, "errors", "class", "error") + total(t, res, "errors", "class", "timeout"); other != 0 {
		t.Errorf("%v failures not classed as refused: %v", other, res.Errors)
	}
	if got := total(t, res, "receiver_refused.total", "instance", "eventproxy-0"); got != refused {
		t.Errorf("the proxy counted %v refused, pipebench %v", got, refused)
	}
}
