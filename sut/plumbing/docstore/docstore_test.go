package docstore

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestMain(m *testing.M) {
	MaybeRunChild() // the test binary is also the store's child
	os.Exit(m.Run())
}

// The store takes inserts and updates through the official MongoDB Go
// driver, answers serverStatus (its pid, its uptime, its insert command
// count) and keeps its data across a restart, after which its pid and
// uptime show it restarted.
func TestStoreThroughTheDriverAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	cl, err := mongo.Connect(options.Client().ApplyURI(s.URI()).SetTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	coll := cl.Database("nvsentinel").Collection("HealthEvents")
	for i := range 20 {
		res, err := coll.InsertOne(ctx, bson.D{{Key: "healthevent", Value: bson.D{{Key: "nodename", Value: "node-" + string(rune('a'+i))}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: res.InsertedID}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "healtheventstatus.nodequarantined", Value: "Quarantined"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	status := func() bson.Raw {
		raw, err := cl.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	st := status()
	if pid := st.Lookup("pid").AsInt64(); int(pid) != s.PID() {
		t.Errorf("serverStatus pid %d, the child is %d", pid, s.PID())
	}
	if ins := st.Lookup("metrics", "commands", "insert", "total").AsInt64(); ins != 20 {
		t.Errorf("insert total %d, want 20", ins)
	}
	// The _id lookups FerretDB makes get an index of their own, and the
	// documents stay as they were.
	if err := s.IndexIDLookups(ctx, "nvsentinel"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.opts.SQLiteDir, "nvsentinel.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	var idx int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE '%_pipebench_id_lookup'`).Scan(&idx); err != nil || idx != 1 {
		t.Fatalf("%d lookup indexes (%v), want 1", idx, err)
	}
	var plan, detail string
	var id, parent int
	if err := db.QueryRow(`EXPLAIN QUERY PLAN SELECT _ferretdb_sjson FROM "`+tableOf(t, db)+`" WHERE _ferretdb_sjson->'$._id' = '"x"'`).Scan(&id, &parent, &plan, &detail); err != nil ||
		!strings.Contains(detail, "_pipebench_id_lookup") {
		t.Errorf("the _id lookup's plan is %q (%v), not through the index", detail, err)
	}
	db.Close()
	before := s.PID()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.PID() == before {
		t.Fatal("the pid did not change")
	}
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "healtheventstatus.nodequarantined", Value: "Quarantined"}})
	if err != nil || n != 20 {
		t.Fatalf("after the restart %d quarantined documents (%v), want 20", n, err)
	}
	if up := status().Lookup("uptime").Double(); up > 30 {
		t.Errorf("uptime %v s after a restart", up)
	}
}

func tableOf(t *testing.T, db *sql.DB) string {
	var name string
	if err := db.QueryRow(`SELECT table_name FROM "_ferretdb_collections" WHERE name = 'HealthEvents'`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}
