package mongodb

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/sut/plumbing/docstore"
)

func TestMain(m *testing.M) {
	docstore.MaybeRunChild() // the test binary is also the store's child
	os.Exit(m.Run())
}

// Each item is an insert and an update of that document, as the store's
// own serverStatus and a count through the driver say; a store that went
// away is a failed send, classified, not a crash.
func TestInsertUpdatePairsAgainstFerretDB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := docstore.Start(ctx, t.TempDir(), docstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	d, err := Factory().New(nil, pipebench.Env{Targets: map[string]string{"mongodb": s.URI()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	const n = 50
	for i := 0; i < n; i += 5 {
		if o := d.Send(ctx, &pipebench.Batch{Seq: uint64(i + 1), Count: 5}); o.Class != pipebench.ClassOK {
			t.Fatalf("send %d: %+v", i, o)
		}
	}
	cl, err := mongo.Connect(options.Client().ApplyURI(s.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	q, err := cl.Database("nvsentinel").Collection("HealthEvents").CountDocuments(ctx, bson.D{{Key: "healtheventstatus.nodequarantined", Value: "Quarantined"}})
	if err != nil || q != n {
		t.Errorf("%d documents quarantined (%v), want %d", q, err, n)
	}
	st, err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if ins, upd := st.Lookup("metrics", "commands", "insert", "total").AsInt64(), st.Lookup("metrics", "commands", "update", "total").AsInt64(); ins != n || upd != n {
		t.Errorf("serverStatus: %d inserts, %d updates, want %d each", ins, upd, n)
	}
	s.Stop(context.Background())
	short, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if o := d.Send(short, &pipebench.Batch{Seq: 100, Count: 1}); o.Class == pipebench.ClassOK || !strings.HasPrefix(o.Detail, "insert") {
		t.Errorf("a send to a stopped store: %+v", o)
	}
}

func TestConfigProblemsAndNoStore(t *testing.T) {
	c := defaultConfig()
	c.URL, c.Operation, c.Collection = "http://x", "upsert", ""
	err := c.Validate()
	for _, want := range []string{"url: not a mongodb://", "database, collection", `operation: "upsert"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if _, err := Factory().New(nil, pipebench.Env{}); err == nil || !strings.Contains(err.Error(), "no store") {
		t.Errorf("no store: %v", err)
	}
}
