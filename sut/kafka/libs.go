package kafka

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/pipebench/pipebench"
)

// LibsEnv names the environment variable that points at the folder of
// Apache Kafka jars (kafka_2.13, kafka-tools and their dependencies) the
// embedded broker, the Kafka tests and bench/kafka.sh run on.
const LibsEnv = "PIPEBENCH_KAFKA_LIBS"

// Version is the Apache Kafka release sut/kafka/pom.xml fetches and the
// embedded broker was tested with.
const Version = "4.1.1"

// fetchHint says how to get the jars.
const fetchHint = "fetch them from Maven Central with `mvn -q -f sut/kafka/pom.xml dependency:copy-dependencies -DoutputDirectory=$PWD/.cache/kafka-libs` " +
	"(what .ci/run does) and set " + LibsEnv + "=$PWD/.cache/kafka-libs, or set the SUT's libs key"

// ErrNoKafka wraps every reason the embedded broker cannot run here (no
// Java, no jars): tests skip on it.
var ErrNoKafka = errors.New("the embedded Kafka cannot run here")

// FindLibs returns the folder of Kafka jars: dir when set, else
// $PIPEBENCH_KAFKA_LIBS, else .cache/kafka-libs under the working
// directory. It must hold kafka_2.13-*.jar; the error says how to fetch
// them.
func FindLibs(dir string) (string, error) {
	var tried []string
	for _, d := range []string{dir, os.Getenv(LibsEnv), filepath.Join(".cache", "kafka-libs")} {
		if d == "" {
			continue
		}
		tried = append(tried, d)
		if m, _ := filepath.Glob(filepath.Join(d, "kafka_2.13-*.jar")); len(m) > 0 {
			abs, err := filepath.Abs(d)
			if err != nil {
				return "", err
			}
			return abs, nil
		}
	}
	msg := "the Apache Kafka jars are not found"
	if len(tried) > 0 {
		msg += fmt.Sprintf(" (looked in %q)", tried)
	}
	return "", pipebench.UsageError(msg, fetchHint, ErrNoKafka)
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
