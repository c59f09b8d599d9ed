package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/sut/kafka/jars"
)

// LibsEnv names the environment variable that points at the folder of
// Apache Kafka jars (kafka_2.13, kafka-tools and their dependencies) the
// embedded broker, the Kafka tests and bench/kafka.sh run on.
const LibsEnv = jars.LibsEnv

// Version is the Apache Kafka release the embedded broker runs and was
// tested with (pom.xml; jars.txt pins its jars).
const Version = jars.Version

// fetchHint says how to get the jars without a fetch at start.
const fetchHint = "run `pipebench fetch kafka` (it fetches the pinned jars from Maven Central, or from " + jars.RepoEnv + "), or set " +
	LibsEnv + " or the SUT's libs key to a folder of them"

// ErrNoKafka wraps every reason the embedded broker cannot run here (no
// Java, no jars): tests skip on it.
var ErrNoKafka = errors.New("the embedded Kafka cannot run here")

// LibsParams says where to look for the jars and whether to fetch them.
type LibsParams struct {
	// Dir is the folder named by the SUT's libs key (first choice).
	Dir string
	// NoFetch uses the cache only when it already holds every jar (the
	// tests: they never reach past loopback).
	NoFetch bool
	// Logger receives the fetch's progress (nil: none).
	Logger *slog.Logger
}

// EnsureLibs returns the folder of Kafka jars: p.Dir when set, else
// $PIPEBENCH_KAFKA_LIBS when set (each must hold kafka_2.13-*.jar),
// else .cache/kafka-libs under the working directory when it holds them
// (a checkout's), else the user's cache folder (CacheDir), where the
// pinned jars are fetched (Fetch) the first time and every jar is checked
// against its SHA-256 at each start.
func EnsureLibs(ctx context.Context, p LibsParams) (string, error) {
	for _, c := range []struct{ dir, what string }{{p.Dir, "the SUT's libs key"}, {os.Getenv(LibsEnv), "$" + LibsEnv}} {
		if c.dir == "" {
			continue
		}
		if hasKafka(c.dir) {
			return filepath.Abs(c.dir)
		}
		return "", pipebench.UsageError(fmt.Sprintf("%s names %s, which holds no kafka_2.13-*.jar", c.what, c.dir),
			"point it at a folder of the Apache Kafka jars, or unset it and pipebench fetches them into its cache", ErrNoKafka)
	}
	if d := filepath.Join(".cache", "kafka-libs"); hasKafka(d) {
		return filepath.Abs(d)
	}
	dir, err := jars.CacheDir()
	if err != nil {
		return "", err
	}
	if p.NoFetch {
		if jars.Complete(dir, jars.Jars()) {
			return dir, nil
		}
		return "", pipebench.UsageError("the Apache Kafka jars are not found (looked in "+LibsEnv+", .cache/kafka-libs and "+dir+")", fetchHint, ErrNoKafka)
	}
	log := p.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var told bool
	got, err := jars.Fetch(ctx, jars.FetchParams{Dir: dir, Every: 2 * time.Second, Progress: func(pr jars.FetchProgress) {
		switch {
		case !pr.Done && !told:
			told = true
			log.Warn("fetching the Apache Kafka "+Version+" jars once, from Maven Central (or "+jars.RepoEnv+")", "into", dir, "progress", jars.FormatProgress(pr))
		case !pr.Done:
			log.Warn("fetching the Apache Kafka jars", "progress", jars.FormatProgress(pr))
		case pr.Fetched > 0:
			log.Warn("fetched the Apache Kafka jars", "into", dir, "MB", fmt.Sprintf("%.1f", float64(pr.Fetched)/1e6), "took", pr.Elapsed.Round(100*time.Millisecond))
		}
	}})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoKafka, err)
	}
	return got, nil
}

func hasKafka(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "kafka_2.13-*.jar"))
	return len(m) > 0
}

// FindJava returns the java command: java when set, else $JAVA_HOME/bin/java,
// else java on PATH; the error says what to install.
func FindJava(java string) (string, error) {
	if java != "" {
		if p, err := exec.LookPath(java); err == nil {
			return p, nil
		}
		return "", pipebench.UsageError(fmt.Sprintf("java %q is not found", java), "install Java 17 or later (apt-get install openjdk-17-jre-headless) or fix the SUT's java key", ErrNoKafka)
	}
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if p := filepath.Join(h, "bin", "java"); isExec(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("java"); err == nil {
		return p, nil
	}
	return "", pipebench.UsageError("no java on PATH: the embedded Apache Kafka is a Java program",
		"install Java 17 or later (apt-get install openjdk-17-jre-headless), or set JAVA_HOME; or point the kafka driver at your own cluster with bootstrap: HOST:9092", ErrNoKafka)
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Classpath is the java class path of the jars in libs.
func Classpath(libs string) string { return filepath.Join(libs, "*") }
