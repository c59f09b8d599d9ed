package httpdriver

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/conn/tlsconf"
	"github.com/pipebench/pipebench/payload"
)

// receiver is a real net/http server on loopback (drivertest's, with
// h2c) that counts items by the Pipebench-Count header.
func receiver(t *testing.T) drivertest.Receiver {
	return drivertest.HTTPReceiver(t, "/events", func(r *http.Request, _ []byte) (int64, error) {
		return strconv.ParseInt(r.Header.Get(payload.HeaderCount), 10, 64)
	})
}

func harness(http2 bool) drivertest.Harness { return harnessWith(http2, 0) }

func harnessWith(http2 bool, pipeline int) drivertest.Harness {
	g, _ := payload.EventFactory().New(nil, pipebench.Env{})
	h := drivertest.Harness{
		Factory:   Factory(),
		Generator: g, Count: 3,
		Receiver: receiver,
		Target:   func(addr string) string { return "http://" + addr + "/events" },
		Configure: func(cfg any) {
			c := cfg.(*Config)
			c.Timeout = pipebench.Duration(time.Second)
			c.HTTP2 = http2
			c.Connections = 8
			c.Pipeline = pipeline
			c.TLS.InsecureSkipVerify = true
		},
		Invalid: func(cfg any) string { cfg.(*Config).Method = "GET"; return "method" },
		Mismatches: []drivertest.Mismatch{
			{Name: "plain server for a TLS client", Detail: "tls handshake", Start: func(t *testing.T) string {
				return "https://" + drivertest.HTTP1Server(t) + "/"
			}},
		},
	}
	if !http2 {
		h.Connections = 8
		h.Mismatches = append(h.Mismatches, drivertest.Mismatch{Name: "TLS server for a plain client", Detail: "protocol mismatch", Start: func(t *testing.T) string {
			return "http://" + drivertest.TLSServer(t) + "/"
		}})
	} else {
		h.Mismatches = append(h.Mismatches, drivertest.Mismatch{Name: "HTTP/1.1-only server for an h2c client", Detail: "protocol mismatch", Start: func(t *testing.T) string {
			return "http://" + drivertest.HTTP1Server(t) + "/"
		}})
	}
	return h
}

func TestConformanceHTTP1(t *testing.T) { drivertest.Run(t, harness(false)) }
func TestConformanceH2C(t *testing.T)   { drivertest.Run(t, harness(true)) }
func TestConformancePipelined(t *testing.T) {
	drivertest.Run(t, harnessWith(false, 16))
}

func TestHeadersAndSecretsAreSentNotPrinted(t *testing.T) {
	got := make(chan http.Header, 1)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Clone():
		default:
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	c := defaultConfig()
	c.Method = "PUT"
	c.Headers = map[string]string{"X-Team": "obs"}
	c.SecretHeaders = map[string]pipebench.Secret{"Authorization": "Bearer s3cret"}
	d, err := New(*c, "http://"+ln.Addr().String()+"/")
	if err != nil {
		t.Fatal(err)
	}
	o := d.Send(context.Background(), &pipebench.Batch{Body: []byte(`{}`), ContentType: "application/json"})
	if o.Class != pipebench.ClassOK {
		t.Fatal(o)
	}
	h := <-got
	if h.Get("X-Team") != "obs" || h.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("headers: %v", h)
	}
	b, _ := c.SecretHeaders["Authorization"].MarshalText()
	if string(b) != "***" || strings.Contains(c.SecretHeaders["Authorization"].String(), "s3cret") {
		t.Errorf("a secret printed as %q", b)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	c := &Config{URL: "ftp://x", Method: "GET", Connections: 0, TLS: tlsconf.Client{CertFile: "/nonexistent.pem"}}
	err := c.Validate()
	for _, want := range []string{"url:", "method:", "connections:", "timeout:", "tls: cert_file and key_file", "tls.cert_file: the file /nonexistent.pem does not exist"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
	if _, err := New(*defaultConfig(), ""); err == nil || pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("no url: %v", err)
	}
}

// BenchmarkSendClosedLoop sends with 64 goroutines against a trivial
// fasthttp server on loopback and reports requests/s.
func BenchmarkSendClosedLoop(b *testing.B) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {}}
	go srv.Serve(ln)
	defer srv.Shutdown()
	d, _ := New(*defaultConfig(), "http://"+ln.Addr().String()+"/")
	body := make([]byte, 256)
	b.SetParallelism(32)
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		bt := &pipebench.Batch{Body: body, ContentType: "application/json"}
		for pb.Next() {
			d.Send(context.Background(), bt)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// An HTTP/1.1 client aimed at a gRPC (HTTP/2) port fails Start with a
// protocol mismatch, on the plain and on the pipelined path.
func TestHTTP1ToGRPCPortIsAMismatch(t *testing.T) {
	addr := drivertest.GRPCServer(t)
	for _, pipeline := range []int{0, 4} {
		c := defaultConfig()
		c.Connections, c.Pipeline = 2, pipeline
		d, err := New(*c, "http://"+addr+"/")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "protocol mismatch") {
			t.Errorf("pipeline %d: Start against a gRPC port: %v", pipeline, err)
		}
		d.Shutdown(context.Background())
	}
}

// Backpressure statuses are refusals, each told apart by its code: 507 is
// an event proxy whose stream is full, 503 one whose broker is gone.
func TestBackpressureStatusesAreRefused(t *testing.T) {
	for _, code := range []int{429, 503, 507} {
		o := statuses.Classify(code)
		if o.Class != pipebench.ClassRefused || o.Unreached || o.Detail != strconv.Itoa(code) {
			t.Errorf("HTTP %d: %+v", code, o)
		}
	}
}
