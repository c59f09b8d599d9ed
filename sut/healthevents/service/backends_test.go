package service

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipebench/pipebench/internal/testkit/kubetest"
	"github.com/pipebench/pipebench/internal/testkit/promtest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// scrape reads one metrics endpoint: each sample's value by its name and
// labels ("name{k=v}" in the text format's order).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	fams := promtest.Families(t, url)
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			key := name
			for _, l := range m.Label {
				if l.GetName() == "type" || l.GetName() == "conn_type" {
					key += "{" + l.GetName() + "=" + l.GetValue() + "}"
				}
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

func dial(t *testing.T, s *Server) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(s.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// Every event is inserted into the FerretDB the service started and marked
// quarantined there, through the official driver; /metrics/database says
// what the store's own serverStatus and count say (read here directly
// through the driver), and a restart of the store shows as
// mongodb_restarts_total.
func TestEventsStoredAndTheStoresOwnStatus(t *testing.T) {
	s := start(t, Config{Listen: "unix://" + filepath.Join(t.TempDir(), "he.sock"), HTTPListen: "127.0.0.1:0", QueueSize: 1000})
	cc := dial(t, s)
	const n = 40
	for i := 1; i <= n; i++ {
		if err := report(t, s, cc, i, "node-"+itoa(i%7)); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return len(s.Applied()) == n }, "%d of %d events applied", len(s.Applied()), n)

	cl, err := mongo.Connect(options.Client().ApplyURI(s.Store().URI()).SetTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	ctx := context.Background()
	coll := cl.Database("nvsentinel").Collection("HealthEvents")
	if q, err := coll.CountDocuments(ctx, bson.D{{Key: "healtheventstatus.nodequarantined", Value: "Quarantined"}}); err != nil || q != n {
		t.Fatalf("%d documents quarantined (%v), want %d", q, err, n)
	}
	raw, err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	own := float64(raw.Lookup("metrics", "commands", "insert", "total").AsInt64())
	// The service reads the store's status every 500 ms.
	var m map[string]float64
	testutil.Eventually(t, 10*time.Second, func() bool {
		m = scrape(t, s.HTTPURL()+"/metrics/database")
		return m["mongodb_op_counters_total{type=insert}"] == own && m["mongodb_op_counters_total{type=update}"] == n
	}, "exported inserts %v and updates %v, the store's serverStatus %v inserts", m["mongodb_op_counters_total{type=insert}"], m["mongodb_op_counters_total{type=update}"], own)
	if m["mongodb_op_counters_total{type=insert}"] != own || own != n {
		t.Errorf("exported inserts %v, the store's serverStatus %v, sent %d", m["mongodb_op_counters_total{type=insert}"], own, n)
	}
	if upd := float64(raw.Lookup("metrics", "commands", "update", "total").AsInt64()); m["mongodb_op_counters_total{type=update}"] != upd {
		t.Errorf("exported updates %v, serverStatus %v", m["mongodb_op_counters_total{type=update}"], upd)
	}
	if m["mongodb_events_stored"] != n {
		t.Errorf("events stored %v, want %d", m["mongodb_events_stored"], n)
	}
	if mem := m["mongodb_ss_mem_resident"]; mem < 5 || mem > 2000 {
		t.Errorf("resident memory %v MB", mem)
	}
	if c := m["mongodb_ss_connections{conn_type=current}"]; c < 1 {
		t.Errorf("%v connections, want at least the service's and this test's", c)
	}
	svc := scrape(t, s.HTTPURL()+"/metrics")
	if svc["healthevents_connector_store_duration_seconds_count"] != n || svc["healthevents_quarantine_event_handling_duration_seconds_count"] != n {
		t.Errorf("stage histograms counted %v stores and %v handlings, want %d", svc["healthevents_connector_store_duration_seconds_count"],
			svc["healthevents_quarantine_event_handling_duration_seconds_count"], n)
	}
	if svc["healthevents_store_connected"] != 1 || svc["healthevents_kube_connected"] != 0 {
		t.Errorf("connected: store %v, kube %v", svc["healthevents_store_connected"], svc["healthevents_kube_connected"])
	}
	if r := m["mongodb_restarts_total"]; r != 0 {
		t.Fatalf("%v restarts before any", r)
	}
	if err := s.Store().Restart(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool {
		return scrape(t, s.HTTPURL()+"/metrics/database")["mongodb_restarts_total"] == 1
	}, "the restart was not seen")
}

// With kube.bin the service starts a real API server, creates the Nodes and
// cordons each event's node through it; /metrics/apiserver is the API
// server's own /metrics (its PATCH count of nodes equals the events).
func TestCordonThroughARealAPIServer(t *testing.T) {
	bin := os.Getenv(kubetest.EnvBin)
	if bin == "" {
		t.Skipf("%s is not set: build the kube binaries with tools/kube/build.sh DIR and set %s=DIR", kubetest.EnvBin, kubetest.EnvBin)
	}
	dir := t.TempDir()
	s, err := New(Config{Listen: "unix://" + filepath.Join(dir, "he.sock"), HTTPListen: "127.0.0.1:0", QueueSize: 1000,
		Store: StoreConfig{Type: StoreNone}, Kube: KubeConfig{Bin: bin, Nodes: 20}})
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	nodes, err := s.KubeClient().CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeLabel + "=true"})
	if err != nil || len(nodes.Items) != 20 {
		t.Fatalf("%d Nodes created (%v), want 20", len(nodes.Items), err)
	}
	cc := dial(t, s)
	const n = 12
	for i := 1; i <= n; i++ {
		if err := report(t, s, cc, i, "node-"+itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return len(s.Applied()) == n }, "%d of %d events applied", len(s.Applied()), n)
	for i := 1; i <= n; i++ {
		node, err := s.KubeClient().CoreV1().Nodes().Get(ctx, "node-"+itoa(i), metav1.GetOptions{})
		if err != nil || !node.Spec.Unschedulable || node.Annotations["pipebench.dev/health-event-seq"] != itoa(i) {
			t.Errorf("node-%d: unschedulable %v, annotations %v (%v)", i, node.Spec.Unschedulable, node.Annotations, err)
		}
	}
	// The passed-through /metrics is the API server's own: the same
	// counter read directly from the API server.
	direct, err := s.KubeClient().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	patches := func(text string) float64 {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, m := range fams["apiserver_request_total"].GetMetric() {
			verb, res := "", ""
			for _, l := range m.Label {
				switch l.GetName() {
				case "verb":
					verb = l.GetValue()
				case "resource":
					res = l.GetValue()
				}
			}
			if verb == "PATCH" && res == "nodes" {
				sum += m.Counter.GetValue()
			}
		}
		return sum
	}
	resp, err := http.Get(s.HTTPURL() + "/metrics/apiserver")
	if err != nil {
		t.Fatal(err)
	}
	passed, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if p, d := patches(string(passed)), patches(string(direct)); p != n || d != n {
		t.Errorf("PATCH nodes: %v through the service, %v directly, want %d", p, d, n)
	}
}
