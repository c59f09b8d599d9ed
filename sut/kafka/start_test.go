package kafka_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/sut/kafka"
	"github.com/pipebench/pipebench/sut/kafka/jars"
)

// fakeJava writes a shell script standing in for java: the storage
// format succeeds, and the "broker" does what body says instead of
// starting (what is simulated: a JVM that hangs, keeps logging without
// becoming ready, or exits). The jars' folder holds an empty
// kafka_2.13 jar.
func fakeJava(t *testing.T, body string) (java, libs string) {
	t.Helper()
	d := t.TempDir()
	java = filepath.Join(d, "java")
	script := "#!/bin/sh\nfor a; do [ \"$a\" = kafka.tools.StorageTool ] && exit 0; done\n" + body + "\n"
	if err := os.WriteFile(java, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	libs = filepath.Join(d, "libs")
	os.Mkdir(libs, 0o755)
	os.WriteFile(filepath.Join(libs, "kafka_2.13-0.jar"), nil, 0o644)
	return java, libs
}

// A broker start ends as soon as the broker process says it will not
// come up: stuck (no CPU, nothing logged) after Stall, still busy when
// start_timeout runs out (with its progress logged meanwhile), exited
// at once with its log.
func TestBrokerStartEndsOnItsOwnState(t *testing.T) {
	for _, c := range []struct {
		name, body, want string
		timeout          time.Duration
		within           time.Duration
		progress         bool
	}{
		{"stuck", "exec sleep 600", "stopped making progress", time.Minute, 20 * time.Second, false},
		{"busy", "while :; do echo still loading; sleep 0.2; done", "still starting when start_timeout (4s) ran out", 4 * time.Second, 20 * time.Second, true},
		{"exits", "echo 'bad server.properties' >&2; exit 3", "bad server.properties", time.Minute, 10 * time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			java, libs := fakeJava(t, c.body)
			var log testutil.Buffer
			began := time.Now()
			cl, err := kafka.StartCluster(context.Background(), kafka.ClusterParams{Java: java, Libs: libs, Dir: t.TempDir(), Stall: time.Second,
				StartTimeout: c.timeout, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			took := time.Since(began)
			if err == nil {
				cl.Stop(context.Background())
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if took > c.within {
				t.Fatalf("took %s to give up", took)
			}
			if got := strings.Contains(log.String(), "Kafka broker still starting"); got != c.progress {
				t.Fatalf("progress logged: %v, want %v; log:\n%s", got, c.progress, log.String())
			}
			if c.progress && !strings.Contains(log.String(), "still loading") {
				t.Fatalf("the progress lines do not show the broker's log:\n%s", log.String())
			}
		})
	}
}

// Where the jars are looked for: the libs key and $PIPEBENCH_KAFKA_LIBS
// must hold them (no fallback past a folder the user named); without
// either, and without a fetch, an empty cache is ErrNoKafka with what to
// run.
func TestEnsureLibs(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	empty := t.TempDir()
	if _, err := kafka.EnsureLibs(context.Background(), kafka.LibsParams{Dir: empty, NoFetch: true}); err == nil || !strings.Contains(err.Error(), "libs key names "+empty) {
		t.Fatalf("an empty libs folder: %v", err)
	}
	t.Setenv(kafka.LibsEnv, empty)
	if _, err := kafka.EnsureLibs(context.Background(), kafka.LibsParams{NoFetch: true}); err == nil || !strings.Contains(err.Error(), "$"+kafka.LibsEnv) {
		t.Fatalf("an empty %s: %v", kafka.LibsEnv, err)
	}
	t.Setenv(kafka.LibsEnv, "")
	_, err := kafka.EnsureLibs(context.Background(), kafka.LibsParams{NoFetch: true})
	var pe *pipebench.Error
	if !errors.Is(err, kafka.ErrNoKafka) || !errors.As(err, &pe) || !strings.Contains(pe.Hint, "pipebench fetch kafka") {
		t.Fatalf("an empty cache: %v (%+v)", err, pe)
	}
}

// From nothing but a Maven repository (a real HTTP server on loopback
// serving the jars Maven resolved, in a repository's layout): the
// embedded broker's first start fetches the pinned jars into an empty
// user cache, starts on them, and takes and serves a record; the second
// start fetches nothing.
func TestFirstStartFetchesTheJars(t *testing.T) {
	kafkatest.Need(t)
	src := os.Getenv(kafka.LibsEnv)
	if src == "" {
		t.Skip(kafka.LibsEnv + " is not set: no jars to serve as a Maven repository")
	}
	root := t.TempDir()
	for _, j := range jars.Jars() {
		p := filepath.Join(root, filepath.FromSlash(j.Path))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(filepath.Join(src, j.Name()), p); err != nil {
			t.Fatal(err)
		}
	}
	var requests int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		http.FileServer(http.Dir(root)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv(kafka.LibsEnv, "")
	t.Setenv(jars.RepoEnv, srv.URL)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var log testutil.Buffer
	for run := 1; run <= 2; run++ {
		c, err := kafka.StartCluster(context.Background(), kafka.ClusterParams{Dir: t.TempDir(), Heap: "256m", JVMOpts: []string{"-XX:TieredStopAtLevel=1"},
			Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := jars.CacheDir()
		if c.Libs() != want {
			t.Errorf("runs on %s, want the cache %s", c.Libs(), want)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()), kgo.DefaultProduceTopic("first"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("first"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		fs := cl.PollRecords(ctx, 1)
		cancel()
		if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
			t.Fatalf("consumed %v (%v)", recs, fs.Errors())
		}
		cl.Close()
		c.Stop(context.Background())
		if run == 1 && requests != len(jars.Jars()) {
			t.Fatalf("the first start made %d requests for %d jars", requests, len(jars.Jars()))
		}
	}
	if requests != len(jars.Jars()) {
		t.Fatalf("the second start made %d requests", requests-len(jars.Jars()))
	}
	if !strings.Contains(log.String(), "fetched the Apache Kafka jars") {
		t.Fatalf("the fetch was not told:\n%s", log.String())
	}
}
