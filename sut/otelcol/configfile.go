package otelcol

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/yamlnode"
	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// MaxConfigFile bounds config_file: a collector's configuration is a few
// KiB (the largest of the collector-contrib examples is 30 KiB).
const MaxConfigFile = 1 << 20

// readConfigFile reads config_file as pipebench reads every file a user
// names: a regular file (the collector reads it after pipebench does: a
// FIFO or a device would hold the run), at most MaxConfigFile, YAML
// nested no deeper than any file pipebench reads.
func readConfigFile(path string) ([]byte, error) {
	data, err := pipebench.ReadInput(context.Background(), pipebench.Input{Path: path, What: "config_file", Limit: MaxConfigFile, Regular: true})
	if err != nil {
		return nil, err
	}
	if _, p := yamlnode.Tokens(path, "collector configuration", string(data)); p != nil {
		return nil, fmt.Errorf("%s", p)
	}
	return data, nil
}

// checkConfigFile reads config_file (readConfigFile) and, for the embedded
// collector, validates it as the collector does before it starts (its
// dry run: every component known and its settings valid, every pipeline
// whole), with the variables pipebench gives the collector set to
// stand-ins of their kind. A collector of your own (command) is given the
// file as it is: its components are its own.
func (c *Config) checkConfigFile() error {
	data, err := readConfigFile(c.ConfigFile)
	if err != nil {
		return err
	}
	if c.Command != "" {
		return nil
	}
	if err := check(data, c.standIns()); err != nil {
		return fmt.Errorf("%s: %w", c.ConfigFile, err)
	}
	return nil
}

// standIns are the values of the variables the collector's configuration
// reads, for its validation: those pipebench sets at the start (ports, the
// sink as the exporter takes it), and the scenario's env.
func (c *Config) standIns() map[string]string {
	sink := "127.0.0.1:4317"
	switch c.sinkExporter() {
	case "otlphttp":
		sink = "http://127.0.0.1:4318"
	case "prometheusremotewrite":
		sink = "http://127.0.0.1:9090/api/v1/write"
	}
	vars := map[string]string{"PIPEBENCH_OTLP_GRPC": "127.0.0.1:4317", "PIPEBENCH_OTLP_HTTP": "127.0.0.1:4318",
		"PIPEBENCH_SINK": sink, "PIPEBENCH_METRICS_PORT": "8888"}
	for k, v := range c.Env {
		vars[k] = v
	}
	return vars
}

// copyConfigFile writes config_file's text, read again as it was checked,
// into the run's folder for the collector to read: the file pipebench
// checked is the one the collector runs, whatever happens to the original
// meanwhile.
func (c *Collector) copyConfigFile(sfx string) (string, error) {
	data, err := readConfigFile(c.cfg.ConfigFile)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, c.prefix+"otelcol-config"+sfx+".yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// ChildEnv names the environment variable that makes pipebench-sut (or a
// test binary that links the collector) the embedded collector: its value
// is the path of the collector's YAML.
const ChildEnv = "PIPEBENCH_OTELCOL_CONFIG"

// CheckEnv names the variable that makes pipebench-sut check a collector
// configuration and exit: its value is the path of a JSON spec (the
// configuration's text and the stand-ins of the variables it reads); the
// program exits 0 when the embedded collector takes it, else 1 with why.
const CheckEnv = "PIPEBENCH_OTELCOL_CHECK"

// CoreChildEnv and CoreCheckEnv are ChildEnv and CheckEnv for the core
// collector (package collector, linked by the pipebench command itself),
// which a configuration that uses only CoreComponents runs on.
const (
	CoreChildEnv = "PIPEBENCH_OTELCOL_CORE_CONFIG"
	CoreCheckEnv = "PIPEBENCH_OTELCOL_CORE_CHECK"
)

// checkSpec is what a check of a configuration in pipebench-sut is given.
type checkSpec struct {
	Config []byte            `json:"config"`
	Vars   map[string]string `json:"vars"`
}

var checker, coreChecker func(data []byte, vars map[string]string) error

// SetChecker gives this package the full embedded collector's own check
// of a configuration (package full's dry run, where it is linked: in
// pipebench-sut and the test binaries that link it); SetCoreChecker the
// core collector's (package collector's, in the pipebench command too).
func SetChecker(f func(data []byte, vars map[string]string) error) { checker = f }

// SetCoreChecker: see SetChecker.
func SetCoreChecker(f func(data []byte, vars map[string]string) error) { coreChecker = f }

// check validates a collector configuration with the embedded collector's
// own validation: in this process when it links the collector, else in
// pipebench-sut (found or built as package wing says).
func check(data []byte, vars map[string]string) error {
	core := CoreOnly(data)
	switch {
	case core && coreChecker != nil:
		return coreChecker(data, vars)
	case checker != nil:
		return checker(data, vars)
	}
	env := CheckEnv
	if core {
		env = CoreCheckEnv
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prog, err := childproc.Program(ctx, env)
	if err != nil {
		return fmt.Errorf("the embedded collector's own check of it needs pipebench-sut: %w", err)
	}
	dir, err := os.MkdirTemp("", "pipebench-otelcol-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := filepath.Join(dir, "check.json")
	if err := childproc.WriteSpec(spec, checkSpec{Config: data, Vars: vars}); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, prog)
	cmd.Env = append(os.Environ(), env+"="+spec)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		msg = strings.TrimPrefix(msg, "embedded collector's check: ")
		if msg == "" {
			msg = err.Error()
		}
		return errors.New(msg)
	}
	return nil
}

// RunCheck is the body of pipebench-sut's check of a configuration: it
// reads the spec at path and checks it with dryRun.
func RunCheck(dryRun func(data []byte, vars map[string]string) error) func(path string) error {
	return func(path string) error {
		var s checkSpec
		if err := childproc.ReadSpec(path, &s); err != nil {
			return err
		}
		return dryRun(s.Config, s.Vars)
	}
}
