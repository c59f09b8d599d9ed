package command

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// Every input file is read through a size limit checked while reading: an
// endless file (/dev/zero) as any input of any command is a usage error
// that names the file, never an exhausted memory. The class: scenarios,
// suites, Results, shards and .proto files, through every command that
// reads them.
func TestEndlessInputsAreRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	dir := t.TempDir()
	proto := filepath.Join(dir, "proto.yaml")
	os.WriteFile(proto, []byte(`
name: endless-proto
target: {driver: grpc, endpoint: "127.0.0.1:1", proto_files: [/dev/zero], method: a.B/C}
workload: {generator: grpc-message, message: {a: 1}}
phases:
  - {name: p, duration: 1s, rate: 1/s}
`), 0o644)
	for _, args := range [][]string{
		{"run", "/dev/zero"},
		{"validate", "/dev/zero"},
		{"plan", "/dev/zero"},
		{"limit", "/dev/zero"},
		{"suite", "run", "/dev/zero"},
		{"suite", "validate", "/dev/zero"},
		{"report", "/dev/zero"},
		{"merge", "/dev/zero"},
		{"k8s", "manifests", "/dev/zero"},
		{"run", proto, "--no-store"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, stderr, code := cli(t, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "/dev/zero") || !(strings.Contains(stderr, "larger than") || strings.Contains(stderr, "not a pipebench result") ||
				strings.Contains(stderr, "not a regular file")) {
				t.Errorf("the error does not say the file is too large, not a Result or not a regular file:\n%s", stderr)
			}
		})
	}
}

// TestHelperLimitedCLI is not a test: it runs the CLI as a child process
// of the tests below, as main does (signals included), with its address
// space limited to PIPEBENCH_HELPER_AS bytes, so that a read or a merge
// that is not bounded fails the test instead of exhausting the machine.
func TestHelperLimitedCLI(t *testing.T) {
	args := os.Getenv("PIPEBENCH_LIMITED_ARGS")
	if args == "" {
		t.Skip("helper process")
	}
	if as, err := strconv.ParseUint(os.Getenv("PIPEBENCH_HELPER_AS"), 10, 64); err == nil && as > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: as, Max: as}); err != nil {
			fmt.Fprintln(os.Stderr, "helper: RLIMIT_AS:", err)
			os.Exit(3)
		}
	}
	os.Args = append([]string{"pipebench"}, strings.Split(args, "\x1f")...)
	ctx, cut, release := execute.Signals(os.Stderr)
	code := executeWith(ctx, cut, nil, os.Args[1:], os.Stdout, os.Stderr)
	release()
	os.Exit(code)
}

// addressSpace is the limit of every child the tests below start: 4 GiB.
const addressSpace = 4 << 30

// child is a CLI process of a test.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	done           chan struct{}
	hwm            atomic.Int64 // its peak resident memory, as last read
}

// startLimited runs the CLI with args in a child process limited to
// addressSpace, its standard input stdin (nil: none).
func startLimited(t *testing.T, stdin *os.File, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperLimitedCLI$"), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), "PIPEBENCH_LIMITED_ARGS="+strings.Join(args, "\x1f"), "PIPEBENCH_HELPER_AS="+strconv.Itoa(addressSpace))
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if stdin != nil {
		c.cmd.Stdin = stdin
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	go c.watchMemory()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits for the child's end, at most within, and returns its exit
// code and how long it took.
func (c *child) wait(t *testing.T, within time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case <-c.done:
	case <-time.After(within):
		t.Fatalf("%v did not end within %s\nstderr:\n%s", c.cmd.Args, within, c.stderr.String())
	}
	return c.cmd.ProcessState.ExitCode(), time.Since(start)
}

// watchMemory reads the child's peak resident memory (VmHWM, of its own
// address space: getrusage's maxrss would count the test's, which the
// child was forked from) every 20 ms until it ends.
func (c *child) watchMemory() {
	path := fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
					if kb<<10 > c.hwm.Load() {
						c.hwm.Store(kb << 10)
					}
				}
			}
		}
		select {
		case <-c.done:
			return
		case <-t.C:
		}
	}
}

// maxRSS is the child's peak resident memory as last read (to 20 ms
// before its end).
func (c *child) maxRSS() int64 { return c.hwm.Load() }

// waiting reports whether a thread of process pid sleeps in the kernel in
// a function whose name holds one of names (/proc/PID/task/*/wchan):
// wait_for_partner is the open of a FIFO no one writes, *pipe_read* a
// read of an empty pipe.
func waiting(pid int, names ...string) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	for _, w := range tasks {
		b, _ := os.ReadFile(w)
		for _, n := range names {
			if strings.Contains(string(b), n) {
				return true
			}
		}
	}
	return false
}

// fifo makes a FIFO in dir that nothing writes.
func fifo(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "input.fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	return p
}

// The signals a test rotates through: each stop signal, and SIGQUIT.
var everySignal = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// fileWords find, in a flag's help, a flag that names a file or a folder.
var fileWords = regexp.MustCompile(`(?i)\bfiles?\b|folder|kubeconfig|sqlite`)

// fileFlags says what each flag naming a file or a folder does with it:
// "input" a file read (a FIFO nobody writes and a signal: the command ends
// at once), "regular" a file another library reads after pipebench checks
// it (a FIFO is refused at once), "history" the SQLite history (a FIFO is
// refused), "output" a file or folder written, "env" handed to scenarios
// (their keys are TestEveryScenarioKeyNamingAFile's), "mention" a help that
// only speaks of another flag's file. A flag whose help names a file and is
// not here fails TestEveryFileFlagAndArgument: classify it, and test it.
var fileFlags = map[string]string{
	"store": "history", "suite": "input", "affinity": "input", "pod-patch": "input",
	"kubeconfig": "regular", "suite run --kubeconfig": "env",
	"out": "output", "charts": "output", "kustomize": "output", "checkpoint": "mention", "namespace": "mention",
	"fetch kafka --dir": "output",
}

// argumentOf is what a command needs as its argument to reach a flag's
// file.
var argumentOf = map[string][]string{
	"show": {"x"}, "report": {"x"}, "merge": {"x.json"}, "suite run": {"builtin:kyma-traces"},
	"k8s run": {"builtin:quickstart"}, "k8s manifests": {"builtin:quickstart"}, "k8s collect": {"a-run"},
}

// The commands that take a file as their argument, and how each is given
// one (F stands for the file).
var fileArguments = [][]string{
	{"run", "F", "--no-store"}, {"validate", "F"}, {"plan", "F"}, {"limit", "F", "--no-store"},
	{"suite", "run", "F", "--no-store"}, {"suite", "validate", "F"}, {"report", "F"}, {"merge", "F", "--no-store"},
	{"k8s", "manifests", "F"}, {"k8s", "run", "F", "--no-store"},
}

// Every flag and argument that names a file a command reads, in every
// command: given a FIFO that nobody writes, the command waits for it (as a
// reader of a FIFO does) until a signal, then ends within a second, saying
// what it was reading (exit 1); given /dev/zero, it refuses it (exit 2).
// The flags are found by walking the command tree (every flag whose help
// names a file must be classified in fileFlags), the arguments by the
// commands' use lines (every command that takes a file must be in
// fileArguments). Each child runs under a 4 GiB address space.
func TestEveryFileFlagAndArgument(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc to see a child wait on a FIFO")
	}
	a := &app{reg: suitetest.Registry(t)}
	type input struct {
		args []string // F: the file
		kind string
	}
	var inputs []input
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "pipebench"))
		if c.Hidden {
			return
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !fileWords.MatchString(f.Usage) && !fileWords.MatchString(f.Name) {
				return
			}
			kind, ok := fileFlags[strings.Join(path, " ")+" --"+f.Name]
			if !ok {
				kind, ok = fileFlags[f.Name]
			}
			if !ok {
				t.Errorf("%s --%s names a file (%q) and is not classified in fileFlags: say what it does with it, and test it", c.CommandPath(), f.Name, f.Usage)
				return
			}
			args := append(append(append([]string(nil), path...), argumentOf[strings.Join(path, " ")]...), "--"+f.Name, "F")
			if path[0] == "gate" {
				args = append(args, "--baseline", "x")
			}
			inputs = append(inputs, input{args, kind})
		})
		if strings.Contains(c.Use, ".yaml") || strings.Contains(c.Use, "SUITE") || strings.Contains(c.Use, "RESULT") || strings.Contains(c.Use, "SHARD") {
			found := false
			for _, fa := range fileArguments {
				found = found || strings.Join(fa, " ") != "" && strings.HasPrefix(strings.Join(fa, " "), strings.Join(path, " ")+" F")
			}
			if !found {
				t.Errorf("%s takes a file (%s) and is not in fileArguments", c.CommandPath(), c.Use)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(a.rootCommand())
	for _, fa := range fileArguments {
		inputs = append(inputs, input{fa, "input"})
	}
	dir := t.TempDir()
	f := fifo(t, dir)
	n := 0
	for _, in := range inputs {
		with := func(file string) []string {
			out := make([]string, len(in.args))
			for i, s := range in.args {
				if s == "F" {
					s = file
				}
				out[i] = s
			}
			return out
		}
		name := strings.Join(in.args, " ")
		switch in.kind {
		case "input":
			sig := everySignal[n%len(everySignal)]
			n++
			t.Run(name+" FIFO "+sig.String(), func(t *testing.T) {
				c := startLimited(t, nil, with(f)...)
				testutil.Eventually(t, 30*time.Second, func() bool { return waiting(c.cmd.Process.Pid, "wait_for_partner") },
					"the command never waited on the FIFO; stderr:\n%s", testutil.Lazy(c.stderr.String))
				c.cmd.Process.Signal(sig)
				code, took := c.wait(t, 10*time.Second)
				if code != pipebench.ExitFailure || took > 3*time.Second || !strings.Contains(c.stderr.String(), "stopped while reading") {
					t.Errorf("after %s: exit %d after %s, want 1 within a second or so; stderr:\n%s", sig, code, took, c.stderr.String())
				}
			})
			t.Run(name+" /dev/zero", func(t *testing.T) {
				_, stderr, code := cli(t, with("/dev/zero")...)
				if code != pipebench.ExitUsage || !strings.Contains(stderr, "/dev/zero") {
					t.Errorf("exit %d, want 2 naming /dev/zero:\n%s", code, stderr)
				}
			})
		case "regular", "history":
			t.Run(name+" FIFO", func(t *testing.T) {
				start := time.Now()
				_, stderr, code := cli(t, with(f)...)
				if code != pipebench.ExitUsage || !strings.Contains(stderr, "not a regular file") || time.Since(start) > 5*time.Second {
					t.Errorf("exit %d after %s, want 2 at once saying it is not a regular file:\n%s", code, time.Since(start), stderr)
				}
			})
		}
	}
}

// A scenario read from the standard input (-) that nobody writes: a
// signal ends the command at once.
func TestStandardInputNobodyWrites(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc")
	}
	for i, args := range [][]string{{"validate", "-"}, {"run", "-", "--no-store"}} {
		sig := everySignal[i%len(everySignal)]
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			c := startLimited(t, r, args...)
			r.Close()
			testutil.Eventually(t, 30*time.Second, func() bool { return waiting(c.cmd.Process.Pid, "pipe_read", "pipe_wait") },
				"the command never waited on its standard input")
			c.cmd.Process.Signal(sig)
			code, took := c.wait(t, 10*time.Second)
			if code != pipebench.ExitFailure || took > 3*time.Second || !strings.Contains(c.stderr.String(), "standard input") {
				t.Errorf("after %s: exit %d after %s; stderr:\n%s", sig, code, took, c.stderr.String())
			}
		})
	}
}

// scenarioFileKeys are the keys of scenario plug-ins that name a file
// pipebench (or a library it calls) reads, each with a scenario that
// gives it the file F, or "folder" for a key that names a folder (an
// import path: what is read there is a file another key names). A key of
// the schema whose name or description says it names a file and is not
// here fails TestEveryScenarioKeyNamingAFile.
var scenarioFileKeys = map[string]string{
	"ca_file":      "name: k\ntarget: {driver: http, url: \"https://127.0.0.1:1/\", tls: {ca_file: F}}\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
	"cert_file":    "name: k\ntarget: {driver: http, url: \"https://127.0.0.1:1/\", tls: {cert_file: F, key_file: F}}\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
	"key_file":     "name: k\ntarget: {driver: http, url: \"https://127.0.0.1:1/\", tls: {cert_file: F, key_file: F}}\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
	"config_file":  "name: k\nsut: {type: otelcol, config_file: F}\ntarget: {driver: otlp}\nworkload: {generator: otlp-traces}\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
	"creds":        "name: k\ntarget: {driver: nats, url: \"nats://127.0.0.1:1\", subject: s, creds: F}\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
	"nkey":         "name: k\ntarget: {driver: nats, url: \"nats://127.0.0.1:1\", subject: s, nkey: F}\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
	"proto_files":  "name: k\ntarget: {driver: grpc, endpoint: \"127.0.0.1:1\", proto_files: [F], method: a.B/C}\nworkload: {generator: grpc-message, message: {a: 1}}\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
	"kubeconfig":   "name: k\ntarget: {driver: http, url: \"http://127.0.0.1:1/\"}\nobservers: [{type: effect-kube, kubeconfig: F}]\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
	"import_paths": "folder",
	// named like one, a count
	"max_concurrent_files": "none",
}

// kubeconfigs are the other places a kubeconfig key is, tested the same.
var kubeconfigs = []string{
	"name: k\nsut: {type: healthevents, kube: {kubeconfig: F}}\ntarget: {driver: http, url: \"http://127.0.0.1:1/\"}\nphases: [{name: p, duration: 1s, rate: 1/s}]\n",
}

// Every scenario key that names a file, found in the JSON Schema (a key
// named *_file(s), creds, nkey, kubeconfig, or whose description says it
// is a file, must be in scenarioFileKeys): given a FIFO, /dev/zero or a
// file past the limit, validate refuses it at once (exit 2) saying which:
// these files are read while a run starts, or by another process, where a
// FIFO would hold the run and an endless file exhaust memory.
func TestEveryScenarioKeyNamingAFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "schema", "scenario.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`_files?$|_paths$|^(creds|nkey|kubeconfig)$`)
	described := regexp.MustCompile(`(?i)^\S+ (is|are) (a|the)?\s*(PEM |kubeconfig |credentials )?files?\b|\.proto files|file holding`)
	keys := map[string]bool{}
	var walk func(n any)
	walk = func(n any) {
		switch x := n.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				for k, v := range props {
					desc, _ := v.(map[string]any)["description"].(string)
					if named.MatchString(k) || described.MatchString(desc) {
						keys[k] = true
					}
				}
			}
			for _, v := range x {
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(schema)
	if len(keys) < 5 {
		t.Fatalf("found only %v in the schema", keys)
	}
	var names []string
	for k := range keys {
		names = append(names, k)
		if _, ok := scenarioFileKeys[k]; !ok {
			t.Errorf("the scenario key %s names a file and is not in scenarioFileKeys: add a scenario that gives it one", k)
		}
	}
	sort.Strings(names)
	t.Logf("keys that name a file: %v", names)
	dir := t.TempDir()
	f := fifo(t, dir)
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil || os.Truncate(big, 5<<20) != nil {
		t.Fatal("cannot make a large file")
	}
	var cases []string
	for k, scen := range scenarioFileKeys {
		if scen != "folder" && scen != "none" {
			cases = append(cases, k+"\x00"+scen)
		}
	}
	for i, scen := range kubeconfigs {
		cases = append(cases, fmt.Sprintf("kubeconfig#%d\x00%s", i+2, scen))
	}
	sort.Strings(cases)
	for _, c := range cases {
		key, scen, _ := strings.Cut(c, "\x00")
		for file, want := range map[string]string{f: "not a regular file", "/dev/zero": "not a regular file", big: "larger than"} {
			t.Run(key+" "+filepath.Base(file), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "s.yaml")
				os.WriteFile(path, []byte(strings.ReplaceAll(scen, "F", strconv.Quote(file))), 0o600)
				start := time.Now()
				_, stderr, code := cli(t, "validate", path)
				if code != pipebench.ExitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, file) {
					t.Errorf("exit %d, want 2 saying %q of %s:\n%s", code, want, file, stderr)
				}
				if took := time.Since(start); took > 10*time.Second {
					t.Errorf("validate took %s", took)
				}
			})
		}
	}
}
