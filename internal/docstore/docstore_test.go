package docstore

import (
	"context"
	"os"
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
