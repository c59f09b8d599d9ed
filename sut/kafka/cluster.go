package kafka

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// ClusterParams says how to run a cluster of Apache Kafka brokers.
type ClusterParams struct {
	// Brokers is the number of broker processes (each also a KRaft
	// controller voter); 1 when zero.
	Brokers int
	// Dir holds every broker's data, configuration and log; a new
	// temporary folder under it is made per cluster.
	Dir string
	// Libs is the folder of jars (FindLibs); Java the java command
	// (FindJava). Both looked up when empty.
	Libs, Java string
	// Heap is the JVM's -Xmx of each broker ("512m" when empty).
	Heap string
	// Props are broker properties set on top of the defaults (such as
	// "num.partitions": "4"); the listeners, node ids and log dirs are
	// the cluster's own and cannot be set.
	Props map[string]string
	// StartTimeout bounds the start of all brokers (5 min when zero);
	// a broker that stops making progress (no CPU used, nothing logged
	// for a minute) fails sooner, one that exits at once. The jars'
	// fetch, the first time, is not counted.
	StartTimeout time.Duration
	// Stall is how long a starting broker may use no CPU and log nothing
	// before its start is given up (1 min when zero).
	Stall time.Duration
	// NoFetch never fetches the jars (the tests): without them in Libs,
	// $PIPEBENCH_KAFKA_LIBS, .cache/kafka-libs or the cache, the error
	// wraps ErrNoKafka.
	NoFetch bool
	// Logger receives the jars' fetch progress and the brokers' start
	// progress (nil: none).
	Logger *slog.Logger
	// JVMOpts are further options of the brokers' JVMs (tests start
	// faster with -XX:TieredStopAtLevel=1).
	JVMOpts []string
	// ClientOpts are franz-go options the cluster's own readiness checks
	// connect with (a SASL mechanism, when Props make the client listener
	// authenticate).
	ClientOpts []kgo.Opt
}

// Cluster is Apache Kafka brokers in KRaft mode, each a child JVM bound
// to loopback, with its data in a temporary folder. Safe for concurrent
// use; Stop once.
type Cluster struct {
	p       ClusterParams
	base    string
	mu      sync.Mutex
	brokers []*Broker
}

// Broker is one broker process of a Cluster.
type Broker struct {
	// ID is its node id (1..N).
	ID int32
	// Port is its client listener on 127.0.0.1; ControllerPort its KRaft
	// controller listener; MetricsPort its Prometheus JMX exporter's
	// (0 when the jars have no exporter).
	Port, ControllerPort, MetricsPort int
	// Dir is its data folder; Config its server.properties.
	Dir, Config string
	proc        *childproc.Proc
}

// Addr is the broker's client address, 127.0.0.1:PORT.
func (b *Broker) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.Port) }

// MetricsURL is the broker's own metrics in the Prometheus text format,
// http://127.0.0.1:PORT/metrics, served by the Prometheus JMX exporter
// running as the broker JVM's agent (empty when the jars have none).
func (b *Broker) MetricsURL() string {
	if b.MetricsPort == 0 {
		return ""
	}
	return "http://127.0.0.1:" + strconv.Itoa(b.MetricsPort) + "/metrics"
}

// PID is the broker's process id (0 when it is not running).
func (b *Broker) PID() int { return b.proc.PID() }

// Log is the path of the broker's log file.
func (b *Broker) Log() string {
	if b.proc == nil {
		return ""
	}
	return b.proc.Log
}

// StartCluster formats and starts the brokers and returns once every one
// of them answers metadata requests naming all of them. Without Java or
// the jars the error wraps ErrNoKafka and says what to install.
func StartCluster(ctx context.Context, p ClusterParams) (*Cluster, error) {
	if p.Brokers < 1 {
		p.Brokers = 1
	}
	if p.Heap == "" {
		p.Heap = "512m"
	}
	if p.StartTimeout <= 0 {
		p.StartTimeout = 5 * time.Minute
	}
	if p.Stall <= 0 {
		p.Stall = time.Minute
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var err error
	if p.Java, err = FindJava(p.Java); err != nil {
		return nil, err
	}
	if p.Libs, err = EnsureLibs(ctx, LibsParams{Dir: p.Libs, NoFetch: p.NoFetch, Logger: p.Logger}); err != nil {
		return nil, err
	}
	if p.Dir == "" {
		p.Dir = os.TempDir()
	}
	base, err := os.MkdirTemp(p.Dir, "kafka-")
	if err != nil {
		return nil, fmt.Errorf("create the Kafka data folder: %w", err)
	}
	c := &Cluster{p: p, base: base}
	for i := 0; i < p.Brokers; i++ {
		b := &Broker{ID: int32(i + 1), Dir: filepath.Join(base, "broker-"+strconv.Itoa(i+1))}
		if err := c.pickPorts(b); err != nil {
			return nil, err
		}
		c.brokers = append(c.brokers, b)
	}
	deadline := time.Now().Add(p.StartTimeout)
	// Ports picked free may be taken before the JVMs bind them: a broker
	// that fails on "Address already in use" gets new ports and the
	// whole cluster is formatted and started again, at most three times.
	for attempt := 0; ; attempt++ {
		err = c.startAll(ctx, deadline)
		if err == nil {
			return c, nil
		}
		c.stopAll(context.Background())
		if attempt == 2 || !strings.Contains(err.Error(), "Address already in use") || ctx.Err() != nil {
			return nil, err
		}
		for _, b := range c.brokers {
			c.pickPorts(b)
			os.RemoveAll(b.Dir)
		}
	}
}

// pickPorts gives the broker free loopback ports: its client and
// controller listeners, and its metrics when the jars have the exporter.
func (c *Cluster) pickPorts(b *Broker) error {
	var err error
	if b.Port, err = childproc.FreePort(); err != nil {
		return err
	}
	if b.ControllerPort, err = childproc.FreePort(); err != nil {
		return err
	}
	b.MetricsPort = 0
	if exporterJar(c.p.Libs) != "" {
		b.MetricsPort, err = childproc.FreePort()
	}
	return err
}

// startAll writes the configurations, formats every broker's storage with
// one cluster id and starts them.
func (c *Cluster) startAll(ctx context.Context, deadline time.Time) error {
	id := clusterID()
	voters := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		voters[i] = fmt.Sprintf("%d@127.0.0.1:%d", b.ID, b.ControllerPort)
	}
	log4j := filepath.Join(c.base, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(log4jConfig), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.base, "jmx-exporter.yaml"), []byte(exporterConfig), 0o644); err != nil {
		return err
	}
	for _, b := range c.brokers {
		if err := os.MkdirAll(b.Dir, 0o755); err != nil {
			return err
		}
		b.Config = filepath.Join(c.base, "broker-"+strconv.Itoa(int(b.ID))+".properties")
		if err := os.WriteFile(b.Config, []byte(c.properties(b, strings.Join(voters, ","))), 0o644); err != nil {
			return err
		}
	}
	// Formatting is a JVM start per broker: in parallel.
	errs := make([]error, len(c.brokers))
	var wg sync.WaitGroup
	for i, b := range c.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.format(ctx, b, id, log4j, deadline)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, b := range c.brokers {
		if err := c.startBroker(b, log4j); err != nil {
			return err
		}
	}
	for _, b := range c.brokers {
		if err := c.waitReady(ctx, b, deadline, c.p.Logger); err != nil {
			return err
		}
	}
	return nil
}

// log4jConfig keeps a broker's log to warnings, and to the lines that say
// it started or stopped.
const log4jConfig = `status = error
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = STDOUT
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = info
logger.broker.name = kafka.server.BrokerServer
logger.broker.level = info
`

// properties is a broker's server.properties: KRaft combined mode on
// loopback, the internal topics replicated as far as the cluster allows,
// consumer groups that join at once.
func (c *Cluster) properties(b *Broker, voters string) string {
	n := len(c.brokers)
	rf := strconv.Itoa(min(n, 3))
	props := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          strconv.Itoa(int(b.ID)),
		"controller.quorum.voters":                         voters,
		"listeners":                                        fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", b.Port, b.ControllerPort),
		"advertised.listeners":                             fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", b.Port),
		"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"log.dirs":                                         b.Dir,
		"offsets.topic.replication.factor":                 rf,
		"offsets.topic.num.partitions":                     "8",
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    "1",
		"transaction.state.log.num.partitions":             "4",
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            "1",
		"group.initial.rebalance.delay.ms":                 "0",
		"num.partitions":                                   "1",
		"default.replication.factor":                       rf,
		"log.segment.bytes":                                strconv.Itoa(64 << 20),
		"replica.lag.time.max.ms":                          "10000",
		"controller.quorum.election.timeout.ms":            "1000",
		"controller.quorum.fetch.timeout.ms":               "2000",
		"broker.heartbeat.interval.ms":                     "500",
		"broker.session.timeout.ms":                        "6000",
	}
	for k, v := range c.p.Props {
		props[k] = v
	}
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&sb, "%s=%s\n", k, props[k])
	}
	return sb.String()
}

// ownProps are the properties the cluster sets itself.
var ownProps = []string{"process.roles", "node.id", "controller.quorum.voters", "controller.quorum.bootstrap.servers", "listeners",
	"advertised.listeners", "listener.security.protocol.map", "controller.listener.names", "inter.broker.listener.name", "log.dirs", "log.dir"}

// jvm is a java command line running a class of the Kafka jars.
func (c *Cluster) jvm(opts []string, log4j string, args ...string) *exec.Cmd {
	a := append(opts, "-Djava.awt.headless=true", "-Dlog4j2.configurationFile="+log4j, "-cp", Classpath(c.p.Libs))
	return exec.Command(c.p.Java, append(a, args...)...)
}

// format writes the broker's storage metadata (kafka.tools.StorageTool).
func (c *Cluster) format(ctx context.Context, b *Broker, id, log4j string, deadline time.Time) error {
	fctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// A short-lived tool: the quick compiler and the serial collector
	// start it fastest.
	cmd := c.jvm([]string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}, log4j, "kafka.tools.StorageTool", "format", "-t", id, "-c", b.Config)
	cmd.SysProcAttr = childproc.DieWithParent()
	done := make(chan struct{})
	go func() {
		select {
		case <-fctx.Done():
			cmd.Process.Kill()
		case <-done:
		}
	}()
	out, err := cmd.CombinedOutput()
	close(done)
	if err != nil && fctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("format the storage of Kafka broker %d: not done when start_timeout (%s) ran out (raise it on a busy machine)\n%s", b.ID, c.p.StartTimeout, strings.TrimSpace(string(out)))
	}
	if err != nil {
		return fmt.Errorf("format the storage of Kafka broker %d: %w\n%s", b.ID, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) startBroker(b *Broker, log4j string) error {
	opts := append([]string{"-Xmx" + c.p.Heap, "-Xms" + c.p.Heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"}, c.p.JVMOpts...)
	if jar := exporterJar(c.p.Libs); jar != "" && b.MetricsPort != 0 {
		opts = append(opts, fmt.Sprintf("-javaagent:%s=127.0.0.1:%d:%s", jar, b.MetricsPort, filepath.Join(c.base, "jmx-exporter.yaml")))
	}
	cmd := c.jvm(opts, log4j, "kafka.Kafka", b.Config)
	proc, err := childproc.Start("Kafka broker "+strconv.Itoa(int(b.ID)), cmd, filepath.Join(c.base, "broker-"+strconv.Itoa(int(b.ID))+".log"))
	if err != nil {
		return err
	}
	b.proc = proc
	return nil
}

// answers reports whether the broker takes connections and its metadata
// names every broker of the cluster.
func (c *Cluster) answers(b *Broker) bool {
	if !childproc.Listening(b.Addr()) {
		return false
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.DialTimeout(time.Second), kgo.RequestRetries(0)}, c.p.ClientOpts...)...)
	if err != nil {
		return false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := metadata(ctx, cl)
	return err == nil && len(resp.Brokers) >= len(c.brokers)
}

// clusterID is a new Kafka cluster id: 16 random bytes in unpadded
// URL-safe base64, never starting with '-' (the tool would read it as a
// flag).
func clusterID() string {
	for {
		var b [16]byte
		rand.Read(b[:])
		if s := base64.RawURLEncoding.EncodeToString(b[:]); s[0] != '-' {
			return s
		}
	}
}

// Bootstrap is every running broker's address, comma-separated.
func (c *Cluster) Bootstrap() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var addrs []string
	for _, b := range c.brokers {
		addrs = append(addrs, b.Addr())
	}
	return strings.Join(addrs, ",")
}

// Brokers lists the cluster's brokers.
func (c *Cluster) Brokers() []*Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Broker(nil), c.brokers...)
}

// Libs is the folder of jars the cluster runs on.
func (c *Cluster) Libs() string { return c.p.Libs }

// Java is the java command the cluster runs on.
func (c *Cluster) Java() string { return c.p.Java }

// Kill ends broker id at once (SIGKILL), as a crash would.
func (c *Cluster) Kill(id int32) error {
	for _, b := range c.Brokers() {
		if b.ID == id {
			b.proc.Kill()
			return nil
		}
	}
	return fmt.Errorf("no broker %d", id)
}

// Restart starts broker id again (after Kill) on its ports and data, and
// returns once the cluster's metadata names every broker again.
func (c *Cluster) Restart(ctx context.Context, id int32) error {
	for _, b := range c.Brokers() {
		if b.ID != id {
			continue
		}
		b.proc.Kill()
		if err := c.startBroker(b, filepath.Join(c.base, "log4j2.properties")); err != nil {
			return err
		}
		return c.waitReady(ctx, b, time.Now().Add(c.p.StartTimeout), c.p.Logger)
	}
	return fmt.Errorf("no broker %d", id)
}

// Stop ends every broker (SIGTERM, then SIGKILL past ctx or 15 s) and
// removes the data folder.
func (c *Cluster) Stop(ctx context.Context) error {
	err := c.stopAll(ctx)
	os.RemoveAll(c.base)
	return err
}

func (c *Cluster) stopAll(ctx context.Context) error {
	var procs []*childproc.Proc
	for _, b := range c.Brokers() {
		procs = append(procs, b.proc)
		b.proc = nil
	}
	return childproc.Stop(ctx, procs...)
}
