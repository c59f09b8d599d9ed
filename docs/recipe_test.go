package docs

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRecipeAddsADriver follows ARCHITECTURE.md's "Add a driver" step by
// step in a copy of the module: it writes the files the steps name (from
// the minimal driver below), wires it with the steps' own line, runs the
// steps' commands (go generate ./schema) and documents it as the last step
// says; then it vets the packages it touched and tests the new driver
// (the shared conformance suite against a real server on loopback), the
// schema and the documentation. A step the recipe leaves out is not done,
// and the check that needs it fails; a step this test does not know how
// to follow fails it too, so that the recipe and the test change together.
//
// It compiles the module's packages in the copy and links the schema's
// generator and test binaries with every plug-in: about 1.5 CPU-minutes
// and 3.5 GB at link time on 2 cores, so it skips under -short.
func TestRecipeAddsADriver(t *testing.T) {
	if testing.Short() {
		t.Skip("follows ARCHITECTURE.md's plug-in recipe in a copy of the module (about 1.5 CPU-minutes): run without -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to follow the recipe: %v", err)
	}
	steps := recipe(t, filepath.Join(root, "ARCHITECTURE.md"), "### Add a driver")
	dir := copyModule(t, root)
	mod := modulePath(t, dir)
	const proto = "recipe"
	deadline := time.Now().Add(10 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-10 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, goTool, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s, in the copy with the recipe's driver: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		t.Logf("go %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Second))
	}
	files := driverFiles(t, dir, mod)
	done := map[string]bool{}
	for i, step := range steps {
		n := i + 1
		spans := Spans(step)
		if len(spans) == 0 {
			t.Fatalf("step %d of the recipe names nothing to do: %s", n, step)
		}
		first := strings.ReplaceAll(spans[0], "<proto>", proto)
		switch {
		case strings.HasPrefix(first, "driver/"+proto+"/"):
			name := strings.TrimPrefix(first, "driver/"+proto+"/")
			src, ok := files[name]
			if !ok {
				t.Fatalf("step %d of the recipe names %s, for which this test has no file: add one to driverFiles", n, spans[0])
			}
			write(t, filepath.Join(dir, "driver", proto, name), src)
			done["file "+name] = true
		case contains(spans, "builtins/builtins.go") && wiring(spans) != "":
			wire(t, filepath.Join(dir, "builtins", "builtins.go"), strings.ReplaceAll(wiring(spans), "<proto>", proto), proto+`driver "`+mod+"/driver/"+proto+`"`)
			done["wire"] = true
		case strings.HasPrefix(first, "go "):
			run(strings.Fields(strings.TrimPrefix(first, "go "))...)
			done[first] = true
		case contains(spans, "docs/scenario.md"):
			document(t, dir, proto)
			done["docs"] = true
		default:
			t.Fatalf("step %d of the recipe is not one this test knows how to follow (a file of driver/<proto>/, the wiring in builtins/builtins.go, a go command, the docs): %s", n, step)
		}
	}
	t.Logf("followed %d steps: %v", len(steps), done)
	pkg := "./driver/" + proto
	run("vet", pkg, "./builtins", "./scenario", "./schema")
	run("test", "-count=1", "-p=1", pkg, "./schema")
	run("test", "-count=1", "-short", "./docs") // the docs' own checks; -short leaves this test out
}

// recipe returns the numbered steps of one "### Add ..." section of the
// file, each as one line.
func recipe(t *testing.T, file, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", file, heading)
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i]
	}
	numbered := regexp.MustCompile(`^\d+\. `)
	var steps []string
	for _, l := range strings.Split(section, "\n") {
		switch {
		case numbered.MatchString(l):
			steps = append(steps, numbered.ReplaceAllString(l, ""))
		case len(steps) > 0 && strings.HasPrefix(l, "   "):
			steps[len(steps)-1] += " " + strings.TrimSpace(l)
		}
	}
	if len(steps) < 3 {
		t.Fatalf("%s: %q has %d numbered steps: has its shape changed?", file, heading, len(steps))
	}
	return steps
}

func contains(spans []string, s string) bool {
	for _, x := range spans {
		if x == s {
			return true
		}
	}
	return false
}

// wiring returns the span of a step that registers a factory.
func wiring(spans []string) string {
	for _, s := range spans {
		if strings.Contains(s, ".Register(") {
			return s
		}
	}
	return ""
}

// copyModule copies the module whose root is from into a temporary
// folder: its regular files, without .git, .cache, nested modules and
// files over 16 MiB (a binary built in the checkout).
func copyModule(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == ".cache" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() > 16<<20 {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

func modulePath(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod names no module")
	}
	return string(m[1])
}

func write(t *testing.T, file, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wire adds the registration line after the last driver's in
// builtins.go, and its import.
func wire(t *testing.T, file, line, imp string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	i := strings.LastIndex(src, "reg.Drivers.Register(")
	j := strings.Index(src, "import (\n")
	if i < 0 || j < 0 {
		t.Fatalf("%s has no import block or no reg.Drivers.Register line to put the recipe's line beside", file)
	}
	i += strings.Index(src[i:], "\n") + 1
	src = src[:i] + "\t\t" + line + ",\n" + src[i:]
	j += len("import (\n")
	src = src[:j] + "\t" + imp + "\n" + src[j:]
	write(t, file, src)
}

// document writes the driver's page and links it: a row of its settings,
// the page linked from the README, a row in the plug-in index of
// docs/scenario.md.
func document(t *testing.T, dir, proto string) {
	t.Helper()
	write(t, filepath.Join(dir, "docs", proto+".md"), "# The recipe's driver\n\n"+
		"## Plug-ins\n\n| kind | name | settings |\n| --- | --- | --- |\n"+
		"| driver | `"+proto+"` | `url`, `connections`, `timeout` — posts each batch's body over HTTP |\n")
	readme := filepath.Join(dir, "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	write(t, readme, string(data)+"\n[The recipe's driver](docs/"+proto+".md)\n")
	index := filepath.Join(dir, "docs", "scenario.md")
	data, err = os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	last := -1
	for i, l := range lines {
		if cells := Row(l); len(cells) == 3 && linkOnly(cells[2]) {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("docs/scenario.md has no plug-in index (| kind | `name` | [page](page.md) |)")
	}
	row := "| driver | `" + proto + "` | [the recipe's driver](" + proto + ".md) |"
	lines = append(lines[:last+1], append([]string{row}, lines[last+1:]...)...)
	write(t, index, strings.Join(lines, "\n"))
}

// driverFiles are the files of the minimal driver the recipe adds, by the
// name the recipe gives them: it posts each batch's body over HTTP with
// what the HTTP drivers share (found by their package's folder, wherever
// it lives in the module).
func driverFiles(t *testing.T, dir, mod string) map[string]string {
	t.Helper()
	// find returns the import path of the shallowest folder named name.
	find := func(name string) string {
		var found string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == name {
				rel, _ := filepath.Rel(dir, p)
				if path := mod + "/" + filepath.ToSlash(rel); found == "" || strings.Count(path, "/") < strings.Count(found, "/") {
					found = path
				}
			}
			return err
		})
		if found == "" {
			t.Fatalf("the module has no package %s, which the recipe's driver uses", name)
		}
		return found
	}
	httppost, netclass, drivertest, payload := find("httppost"), find("netclass"), find("drivertest"), find("payload")
	return map[string]string{
		"config.go": `package recipedriver

import (
	"errors"
	"fmt"
	"time"

	"` + mod + `"
)

// Config configures the recipe driver.
type Config struct {
	// URL is where each batch is posted (empty: the run's target).
	URL string ` + "`yaml:\"url\" json:\"url,omitempty\"`" + `
	// Connections bounds the connections held to the receiver.
	Connections int ` + "`yaml:\"connections\" json:\"connections\"`" + `
	// Timeout bounds one post, its answer included.
	Timeout pipebench.Duration ` + "`yaml:\"timeout\" json:\"timeout\"`" + `
}

func defaultConfig() *Config {
	return &Config{Connections: 4, Timeout: pipebench.Duration(5 * time.Second)}
}

// Validate reports every problem, each starting with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Connections < 1 {
		errs = append(errs, fmt.Errorf("connections: %d is below 1", c.Connections))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout: must be more than 0"))
	}
	return errors.Join(errs...)
}
`,
		"driver.go": `// Package recipedriver posts each batch's body over HTTP: the driver
// the plug-in recipe's test adds.
package recipedriver

import (
	"context"
	"net/http"
	"time"

	"` + mod + `"
	"` + httppost + `"
	"` + netclass + `"
)

// Factory returns the factory of the "recipe" driver.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("recipe", "posts each batch's body over HTTP (the plug-in recipe's driver)", defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			url := c.URL
			if url == "" {
				url = env.TargetFor("recipe")
			}
			hostport, err := httppost.HostPort(url, url, "give target.url, an http:// URL")
			if err != nil {
				return nil, err
			}
			return &Driver{url: url, hostport: hostport, timeout: c.Timeout.D(),
				client: httppost.New(httppost.Params{Conns: c.Connections, Timeout: c.Timeout.D(), Rules: netclass.EventStatuses})}, nil
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes})
}

// Driver posts batches to one URL. Send is safe for concurrent use.
type Driver struct {
	url, hostport string
	timeout       time.Duration
	client        *httppost.Client
}

var _ pipebench.Driver = (*Driver)(nil)

// Start fails when nothing listens at the target.
func (d *Driver) Start(ctx context.Context) error {
	c, err := netclass.Dial(ctx, d.hostport, nil, d.timeout)
	if err != nil {
		if netclass.Classify(err).Unreached {
			return netclass.StartError("recipe driver: cannot connect to "+d.hostport, err, "is the receiver listening there?")
		}
		return nil
	}
	return c.Close()
}

// Send posts the batch's body with its headers.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	h := http.Header{}
	for _, kv := range b.Headers {
		h.Set(kv.Name, kv.Value)
	}
	if b.ContentType != "" {
		h.Set("Content-Type", b.ContentType)
	}
	o, _ := d.client.Post(ctx, d.url, h, b.Body)
	return o
}

// Shutdown closes the idle connections.
func (d *Driver) Shutdown(context.Context) error {
	d.client.CloseIdle()
	return nil
}
`,
		"driver_test.go": `package recipedriver

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"` + mod + `"
	"` + drivertest + `"
	"` + payload + `"
)

func TestConformance(t *testing.T) {
	g, _ := payload.EventFactory().New(nil, pipebench.Env{})
	drivertest.Run(t, drivertest.Harness{
		Factory: Factory(), Generator: g, Count: 3,
		Receiver: func(t *testing.T) drivertest.Receiver {
			return drivertest.HTTPReceiver(t, "/recipe", func(r *http.Request, _ []byte) (int64, error) {
				return strconv.ParseInt(r.Header.Get(payload.HeaderCount), 10, 64)
			})
		},
		Target: func(addr string) string { return "http://" + addr + "/recipe" },
		Configure: func(cfg any) {
			c := cfg.(*Config)
			c.Timeout, c.Connections = pipebench.Duration(time.Second), 2
		},
		Invalid: func(cfg any) string { cfg.(*Config).Connections = 0; return "connections" },
	})
}
`,
	}
}
