// Package browsertest loads pages in a real headless Chromium (Debian's
// chromium package) for tests of the HTML report and the live dashboard,
// and collects every console error and uncaught exception on the way.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumEnv names the Chromium binary; .ci/run sets it. Without it the
// tests look for chromium on PATH, and skip (saying so) when there is none.
const ChromiumEnv = "PIPEBENCH_TEST_CHROMIUM"

// ArtifactsEnv names the folder screenshots are written to (default: a
// pipebench-artifacts folder in the system's temporary folder).
const ArtifactsEnv = "PIPEBENCH_ARTIFACTS"

// Page is one tab of a headless Chromium.
type Page struct {
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

// Open starts Chromium, loads url and waits for the page's load event. The
// browser stops when the test ends.
func Open(t *testing.T, url string) *Page {
	t.Helper()
	bin := os.Getenv(ChromiumEnv)
	if bin == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				bin = p
				break
			}
		}
	}
	if bin == "" {
		t.Skipf("no Chromium: install Debian's chromium package or set %s (.ci/run does)", ChromiumEnv)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // tests may run as root in a container
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	p := &Page{ctx: ctx}
	// Start the tab, then read its console until the test ends.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium %s did not start: %v", bin, err)
	}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				p.addErr(fmt.Sprintf("%s (%s:%d)", m.String(), m.URL, m.Line))
			}
		}
	}()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("chromium could not load %s: %v", url, err)
	}
	return p
}

func (p *Page) addErr(s string) {
	p.mu.Lock()
	p.errs = append(p.errs, s)
	p.mu.Unlock()
}

// Errors returns the console errors and exceptions seen so far.
func (p *Page) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}

// Eval evaluates a JavaScript expression on the page (awaiting it if it is
// a promise) and returns its value.
func Eval[T any](t *testing.T, p *Page, js string) T {
	t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// WaitFor polls a JavaScript condition until it is true or timeout passes.
func (p *Page) WaitFor(t *testing.T, cond string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if Eval[bool](t, p, "Boolean("+cond+")") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s the page still fails %s", timeout, cond)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Screenshot writes a full-page PNG named name into the artifacts folder
// and returns its path.
func (p *Page) Screenshot(t *testing.T, name string) string {
	t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "pipebench-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	return path
}
