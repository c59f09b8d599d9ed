package childproc

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

func TestFreePortBinds(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d is not free: %v", p, err)
	}
	ln.Close()
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	os.WriteFile(path, []byte(b.String()), 0o644)
	got := strings.Split(Tail(path, 20), "\n")
	if len(got) != 20 || got[0] != "  line 11" || got[19] != "  line 30" {
		t.Errorf("tail: %q", got)
	}
	if Tail(filepath.Join(t.TempDir(), "none"), 20) != "(no log)" {
		t.Error("a missing log")
	}
}

// A real child: ready once its file appears; stopped by SIGTERM.
func TestProcStartsWaitsAndStops(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "up")
	p, err := Start("the sleeper", exec.Command("sh", "-c", "echo starting; touch "+mark+"; exec sleep 60"), filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	if p.PID() == 0 {
		t.Fatal("no pid")
	}
	if err := p.WaitReady(context.Background(), 20*time.Second, func() bool { _, err := os.Stat(mark); return err == nil }); err != nil {
		t.Fatal(err)
	}
	if err := Stop(context.Background(), p, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Tail(), "starting") {
		t.Errorf("log tail %q", p.Tail())
	}
	var never *Proc
	if never.PID() != 0 || Stop(context.Background(), never) != nil {
		t.Error("a process that never started")
	}
}

// A child that exits while starting is reported with its log; one that
// ignores SIGTERM is killed and named.
func TestProcExitedAndKilled(t *testing.T) {
	dir := t.TempDir()
	p, err := Start("the quitter", exec.Command("sh", "-c", "echo bad flag; exit 3"), filepath.Join(dir, "log1"))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady(context.Background(), 20*time.Second, func() bool { return false })
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "bad flag") || !strings.Contains(err.Error(), "the quitter exited while starting") {
		t.Errorf("exit while starting: %v", err)
	}
	stubborn, err := Start("the stubborn", exec.Command("sh", "-c", "trap '' TERM; echo up; while :; do sleep 1; done"), filepath.Join(dir, "log2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := stubborn.WaitReady(context.Background(), 20*time.Second, func() bool { return strings.Contains(stubborn.Tail(), "up") }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := Stop(ctx, stubborn); err == nil || !strings.Contains(err.Error(), "the stubborn did not stop on SIGTERM and was killed") {
		t.Errorf("stop: %v", err)
	}
}

// A test binary started as its own child must recognise the child's
// variable in TestMain; one that would not is refused before it starts
// (it would run its tests again, and start the child again), and the
// error says what to add. A variable TestMain handles starts as usual.
func TestStartRefusesAnUnrecognisedSelf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "PIPEBENCH_CHILDPROC_TEST_NOBODY=1")
	if _, err := Start("the unknown child", cmd, filepath.Join(dir, "unknown.log")); err == nil || !strings.Contains(err.Error(), "children.MaybeRun()") {
		t.Fatalf("Start of this test binary with a variable no TestMain handles: %v; want a refusal naming children.MaybeRun()", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "unknown.log")); !os.IsNotExist(err) {
		t.Fatalf("the refused child's log exists (%v): it was started", err)
	}

	cmd = exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=ok")
	p, err := Start("the known child", cmd, filepath.Join(dir, "known.log"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool { _, done := p.Exited(); return done }, "the known child exits")
	if err, _ := p.Exited(); err != nil {
		t.Fatalf("the known child: %v; its log:\n%s", err, p.Tail())
	}
}

// A program (not a test) that would start itself as a child without
// calling MaybeRunChild is refused too, with what to call where.
func TestStartRefusesAnUnrecognisedSelfProgram(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "selfstart")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/selfstart").CombinedOutput(); err != nil {
		t.Fatalf("build the program: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "call sut/all's MaybeRunChild() first thing in main") {
		t.Fatalf("the program printed %q; want Start's refusal naming it", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "child.log")); !os.IsNotExist(err) {
		t.Fatalf("the refused child's log exists (%v): it was started", err)
	}
}
