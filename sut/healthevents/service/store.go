package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/pipebench/pipebench/sut/plumbing/docstore"
)

// store is the document store the connector writes events to and the
// quarantine stage updates, through the official MongoDB Go driver.
type store struct {
	kind   string
	server *docstore.Server // the FerretDB child, when this service started it
	client *mongo.Client
	coll   *mongo.Collection
	db     *mongo.Database
}

// openStore starts FerretDB (type ferretdb) or connects to mongodb_url, and
// checks it answers.
func openStore(ctx context.Context, cfg StoreConfig, dir string) (*store, error) {
	st := &store{kind: cfg.Type}
	uri := cfg.MongoDBURL.Reveal()
	if cfg.Type == StoreFerretDB {
		var err error
		if st.server, err = docstore.Start(ctx, dir, docstore.Options{PostgresURL: cfg.PostgresURL.Reveal()}); err != nil {
			return nil, fmt.Errorf("healthevents: start the document store: %w", err)
		}
		uri = st.server.URI()
	}
	cl, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(30 * time.Second).SetMaxPoolSize(200))
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err = cl.Ping(pctx, nil)
		cancel()
	}
	if err != nil {
		st.close(context.Background())
		where := "store.mongodb_url"
		if st.server != nil {
			where = "the FerretDB it started"
		}
		return nil, fmt.Errorf("healthevents: the document store (%s) does not answer: %w", where, err)
	}
	st.client = cl
	st.db = cl.Database(cfg.Database)
	st.coll = st.db.Collection(cfg.Collection)
	if st.server != nil {
		// The collection exists before the first event, with FerretDB's
		// SQLite _id lookups indexed (see IndexIDLookups).
		if err := st.db.CreateCollection(ctx, cfg.Collection); err != nil && !isExists(err) {
			st.close(context.Background())
			return nil, fmt.Errorf("healthevents: create %s.%s: %w", cfg.Database, cfg.Collection, err)
		}
		if err := st.server.IndexIDLookups(ctx, cfg.Database); err != nil {
			st.close(context.Background())
			return nil, fmt.Errorf("healthevents: %w", err)
		}
	}
	return st, nil
}

// URI is the store's connection string as the service uses it (a
// mongodb_url's password masked).
func (st *store) URI() string {
	if st.server != nil {
		return st.server.URI()
	}
	return "mongodb (store.mongodb_url)"
}

// insert stores one event as the platform connector does and returns its
// id.
func (st *store) insert(ctx context.Context, ev event) (any, error) {
	doc := bson.D{
		{Key: "healthevent", Value: bson.D{
			{Key: "agent", Value: ev.agent}, {Key: "checkname", Value: ev.check},
			{Key: "isfatal", Value: ev.fatal}, {Key: "nodename", Value: ev.node},
			{Key: "sequence", Value: int64(ev.seq)}, {Key: "receivedat", Value: ev.received},
		}},
		{Key: "healtheventstatus", Value: bson.D{{Key: "nodequarantined", Value: nil}}},
	}
	res, err := st.coll.InsertOne(ctx, doc)
	if err != nil {
		return nil, err
	}
	return res.InsertedID, nil
}

// markQuarantined records the quarantine on the event's document, as the
// fault-quarantine module does.
func (st *store) markQuarantined(ctx context.Context, id any) error {
	_, err := st.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "healtheventstatus.nodequarantined", Value: "Quarantined"}}}})
	return err
}

func (st *store) close(ctx context.Context) {
	if st.client != nil {
		st.client.Disconnect(ctx)
	}
	if st.server != nil {
		st.server.Stop(ctx)
	}
}

// DBStatus is what the store says of itself, read by serverStatus and a
// count through the driver.
type DBStatus struct {
	PID     int64   // the server's process id
	Uptime  float64 // seconds
	Inserts float64 // insert operations (MongoDB: opcounters.insert; FerretDB: insert commands)
	Updates float64
	// ResidentMB is the server's resident memory (MongoDB: mem.resident;
	// FerretDB, which does not report it: its process's VmRSS); -1 unknown.
	ResidentMB float64
	// Connections is the open client connections (MongoDB:
	// connections.current; FerretDB, which does not report them: its
	// process's established TCP connections); -1 unknown.
	Connections float64
	Stored      float64 // documents in the events collection
	MemSource   string  // where ResidentMB comes from
	ConnSource  string  // where Connections comes from
}

// Status reads the store's serverStatus and its event count.
func (st *store) Status(ctx context.Context) (DBStatus, error) {
	raw, err := st.client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		return DBStatus{}, err
	}
	s := DBStatus{ResidentMB: -1, Connections: -1}
	num := func(keys ...string) (float64, bool) {
		v, err := raw.LookupErr(keys...)
		if err != nil {
			return 0, false
		}
		if f, ok := v.AsFloat64OK(); ok {
			return f, true
		}
		return 0, false
	}
	if v, ok := num("pid"); ok {
		s.PID = int64(v)
	}
	s.Uptime, _ = num("uptime")
	if v, ok := num("opcounters", "insert"); ok {
		s.Inserts, _ = v, true
		s.Updates, _ = num("opcounters", "update")
	} else {
		s.Inserts, _ = num("metrics", "commands", "insert", "total")
		s.Updates, _ = num("metrics", "commands", "update", "total")
	}
	if v, ok := num("mem", "resident"); ok {
		s.ResidentMB, s.MemSource = v, "serverStatus mem.resident"
	} else if st.server != nil && s.PID > 0 {
		if kb, err := vmRSS(int(s.PID)); err == nil {
			s.ResidentMB, s.MemSource = kb/1024, "/proc/PID/status VmRSS (FerretDB reports no mem)"
		}
	}
	if v, ok := num("connections", "current"); ok {
		s.Connections, s.ConnSource = v, "serverStatus connections.current"
	} else if st.server != nil && s.PID > 0 {
		if n, err := establishedTo(st.server.URI()); err == nil {
			s.Connections, s.ConnSource = n, "established TCP connections to its port (FerretDB reports none)"
		}
	}
	// collStats' count: a full count is a scan on FerretDB's SQLite.
	cs, err := st.db.RunCommand(ctx, bson.D{{Key: "collStats", Value: st.coll.Name()}}).Raw()
	if err != nil {
		return s, err
	}
	if v, ok := cs.Lookup("count").AsFloat64OK(); ok {
		s.Stored = v
	} else if v, ok := cs.Lookup("count").AsInt64OK(); ok {
		s.Stored = float64(v)
	}
	return s, nil
}

// vmRSS reads a process's resident set in KiB.
func vmRSS(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.ParseFloat(f[0], 64)
			}
		}
	}
	return 0, errors.New("no VmRSS")
}

// establishedTo counts the established TCP connections whose local end is
// the store's port (the server's side of each client connection), from
// /proc/net/tcp.
func establishedTo(uri string) (float64, error) {
	hostport := strings.TrimSuffix(strings.TrimPrefix(uri, "mongodb://"), "/")
	i := strings.LastIndexByte(hostport, ':')
	port, err := strconv.Atoi(hostport[i+1:])
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	want := fmt.Sprintf(":%04X", port)
	n := 0
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "01" { // 01: ESTABLISHED
			n++
		}
	}
	return float64(n), nil
}

// dbCollector exports the store's status as Prometheus metrics under the
// names the MongoDB exporter uses (mongodb_op_counters_total{type},
// mongodb_ss_mem_resident, mongodb_ss_connections{conn_type="current"},
// mongodb_ss_uptime), plus mongodb_events_stored and pipebench's count of
// the restarts it saw (mongodb_restarts_total: the pid changed or the
// uptime went back). It reads serverStatus and the count every 500 ms in
// the background (poll), so that a scrape never waits on a busy store; a
// scrape shows the latest reading.
type dbCollector struct {
	st *store
	// sent returns what the service handed the store so far (received
	// less those the store never took) and when it last received one.
	sent func() (float64, time.Time)

	mu       sync.Mutex
	last     DBStatus
	lastPoll time.Time // when the reading in last began
	ok       bool
	restarts float64
}

// poll reads the store's status until stop is closed.
func (c *dbCollector) poll(stop <-chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := c.st.Status(ctx)
		cancel()
		c.mu.Lock()
		if err == nil {
			if c.last.PID != 0 && (s.PID != c.last.PID || s.Uptime < c.last.Uptime) {
				c.restarts++
			}
			c.last, c.lastPoll = s, began
		}
		c.ok = err == nil
		c.mu.Unlock()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

var (
	descOps      = prometheus.NewDesc("mongodb_op_counters_total", "Operations by type, from serverStatus (FerretDB: its command counts).", []string{"type"}, nil)
	descMem      = prometheus.NewDesc("mongodb_ss_mem_resident", "Resident memory in MB (FerretDB: its process's VmRSS).", []string{"source"}, nil)
	descConns    = prometheus.NewDesc("mongodb_ss_connections", "Client connections (FerretDB: established TCP connections to it).", []string{"conn_type", "source"}, nil)
	descUptime   = prometheus.NewDesc("mongodb_ss_uptime", "Server uptime in seconds, from serverStatus.", nil, nil)
	descStored   = prometheus.NewDesc("mongodb_events_stored", "Documents in the events collection (collStats count).", nil, nil)
	descRestarts = prometheus.NewDesc("mongodb_restarts_total", "Restarts seen between readings: the pid changed or the uptime went back.", nil, nil)
	descUp       = prometheus.NewDesc("mongodb_up", "1 when the latest serverStatus answered.", nil, nil)
	descPending  = prometheus.NewDesc("healthevents_store_unconfirmed", "Events the service handed the store that the store's own count does not show yet (at least 1 while the latest count began before the last event arrived): 0 means mongodb_events_stored at this scrape is final.", nil, nil)
)

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOps, descMem, descConns, descUptime, descStored, descRestarts, descUp, descPending} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	s, ok, restarts, polled := c.last, c.ok, c.restarts, c.lastPoll
	c.mu.Unlock()
	if c.sent != nil {
		n, at := c.sent()
		pending := math.Max(0, n-s.Stored)
		if polled.Before(at) {
			pending = math.Max(1, pending)
		}
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, pending)
	}
	ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, restarts)
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, b2f(ok))
	if s.PID == 0 {
		return // never answered
	}
	ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, s.Inserts, "insert")
	ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, s.Updates, "update")
	ch <- prometheus.MustNewConstMetric(descUptime, prometheus.GaugeValue, s.Uptime)
	ch <- prometheus.MustNewConstMetric(descStored, prometheus.GaugeValue, s.Stored)
	if s.ResidentMB >= 0 {
		ch <- prometheus.MustNewConstMetric(descMem, prometheus.GaugeValue, s.ResidentMB, s.MemSource)
	}
	if s.Connections >= 0 {
		ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, s.Connections, "current", s.ConnSource)
	}
}

// isExists reports whether err says the collection exists already.
func isExists(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && (ce.Code == 48 || ce.Name == "NamespaceExists")
}
