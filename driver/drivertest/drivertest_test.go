package drivertest_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// udpConfig configures udpDriver.
type udpConfig struct {
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
}

// Validate reports a timeout that is not positive.
func (c *udpConfig) Validate() error {
	if c.Timeout <= 0 {
		return errors.New("timeout: must be more than 0")
	}
	return nil
}

// udpDriver is the smallest driver of a protocol that sends no answer, to
// show that the suite's NoAnswer mode passes one (pipebench has no UDP
// driver of its own yet): each batch is one datagram, its item count as
// text, on a connected UDP socket; a write the kernel refuses (an ICMP
// port unreachable came back) is refused and unreached.
type udpDriver struct {
	addr    string
	timeout time.Duration
	mu      sync.Mutex
	c       net.Conn
}

func udpFactory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("udp-test", "one UDP datagram a batch (drivertest's own test)",
		func() *udpConfig { return &udpConfig{Timeout: pipebench.Duration(time.Second)} },
		func(c *udpConfig, env pipebench.Env) (pipebench.Driver, error) {
			if env.Target == "" {
				return nil, pipebench.UsageError("the udp-test driver has no target", "give it one", nil)
			}
			return &udpDriver{addr: env.Target, timeout: c.Timeout.D()}, nil
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes})
}

func (d *udpDriver) Start(context.Context) error {
	c, err := net.Dial("udp", d.addr)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.c = c
	d.mu.Unlock()
	return nil
}

func (d *udpDriver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	if err := ctx.Err(); err != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: err.Error()}
	}
	d.mu.Lock()
	c := d.c
	d.mu.Unlock()
	if c == nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "not started", Message: "send before Start"}
	}
	c.SetWriteDeadline(time.Now().Add(d.timeout))
	if _, err := c.Write([]byte(strconv.Itoa(b.Count))); err != nil {
		return netclass.Classify(err)
	}
	return pipebench.Outcome{}
}

func (d *udpDriver) Shutdown(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.c != nil {
		return d.c.Close()
	}
	return nil
}

// udpReceiver is a UDP socket on loopback that adds up the item counts
// of the datagrams it reads.
func udpReceiver(t *testing.T) drivertest.Receiver {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc.(*net.UDPConn).SetReadBuffer(4 << 20) // as much as the system lets a burst wait
	var items atomic.Int64
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if k, err := strconv.Atoi(string(buf[:n])); err == nil {
				items.Add(int64(k))
			}
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { pc.Close() }) }
	t.Cleanup(stop)
	return drivertest.Receiver{Target: pc.LocalAddr().String(), Received: items.Load, Set: func(drivertest.Answer) {}, Close: stop}
}

// A driver of a protocol without answers passes the suite in NoAnswer
// mode.
func TestNoAnswerModePassesAUDPDriver(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Factory: udpFactory(), Receiver: udpReceiver, Count: 2, NoAnswer: true,
		Generator: pipebench.GeneratorFunc(func(seq uint64, n int, _ time.Time) pipebench.Batch {
			return pipebench.Batch{Seq: seq, Count: n}
		}),
		Invalid: func(cfg any) string { cfg.(*udpConfig).Timeout = 0; return "timeout" },
	})
}
