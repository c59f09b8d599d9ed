// Package mongodb is a driver that writes to a MongoDB-protocol document
// store directly through the official MongoDB Go driver: for each item an
// insertOne, or an insertOne and an updateOne of that document by _id (the
// direct database benchmark of the fault-quarantine report: "1,000
// insert+update pairs"). It aims at the system under test's "mongodb"
// endpoint (the healthevents service's store) unless its url names one.
package mongodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/pipebench/pipebench"
)

// Factory returns the factory of the "mongodb" driver. It takes any
// payload: the documents are the benchmark's own, numbered by the items'
// sequence numbers.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("mongodb", "insert (and update) a document per item in a MongoDB-protocol store through the official driver",
		defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			uri := c.URL.Reveal()
			if uri == "" {
				uri = env.Targets["mongodb"]
			}
			if uri == "" {
				return nil, pipebench.UsageError("the mongodb driver has no store to write to",
					"give target.url (mongodb://HOST:PORT/), or use it with sut: {type: healthevents}, whose store it then writes to", nil)
			}
			return &Driver{cfg: *c, uri: uri}, nil
		})
}

// Driver writes to one store. Send is safe for concurrent use.
type Driver struct {
	cfg    Config
	uri    string
	client *mongo.Client
	coll   *mongo.Collection
}

var _ pipebench.Driver = (*Driver)(nil)

// Start connects and checks the store answers.
func (d *Driver) Start(ctx context.Context) error {
	cl, err := mongo.Connect(options.Client().ApplyURI(d.uri).SetTimeout(d.cfg.Timeout.D()))
	if err != nil {
		return fmt.Errorf("mongodb: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.Ping(pctx, nil); err != nil {
		cl.Disconnect(context.Background())
		return pipebench.Unreached(fmt.Errorf("mongodb: the document store does not answer: %w", err))
	}
	d.client = cl
	d.coll = cl.Database(d.cfg.Database).Collection(d.cfg.Collection)
	return nil
}

// Send writes the batch's items one after the other, each an insert (and
// an update of it).
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	for i := 0; i < max(b.Count, 1); i++ {
		seq := b.Seq + uint64(i)
		doc := bson.D{
			{Key: "healthevent", Value: bson.D{{Key: "agent", Value: "benchmark"}, {Key: "isfatal", Value: true},
				{Key: "nodename", Value: "test-" + strconv.FormatUint(seq, 10)}, {Key: "sequence", Value: int64(seq)}}},
			{Key: "healtheventstatus", Value: bson.D{{Key: "nodequarantined", Value: nil}}},
		}
		res, err := d.coll.InsertOne(ctx, doc)
		if err != nil {
			return outcome("insert", err)
		}
		if d.cfg.Operation == OpInsertUpdate {
			_, err = d.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: res.InsertedID}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "healtheventstatus.nodequarantined", Value: "Quarantined"}}}})
			if err != nil {
				return outcome("update", err)
			}
		}
	}
	return pipebench.Outcome{Class: pipebench.ClassOK}
}

// outcome classifies a failed operation.
func outcome(op string, err error) pipebench.Outcome {
	o := pipebench.Outcome{Class: pipebench.ClassError, Detail: op + " failed", Message: op + ": " + err.Error()}
	switch {
	case mongo.IsTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		o.Class, o.Detail = pipebench.ClassTimeout, op+" timed out"
	case mongo.IsNetworkError(err):
		o.Detail = op + ": connection failed"
	}
	return o
}

// Shutdown disconnects.
func (d *Driver) Shutdown(ctx context.Context) error {
	if d.client == nil {
		return nil
	}
	return d.client.Disconnect(ctx)
}
