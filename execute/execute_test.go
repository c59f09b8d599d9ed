package execute_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/testkit/scenariotest"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/store"
)

// An HTTP target refused before any load: the run is invalid (exit 98),
// and its Result is kept like any other: the file (owner-only), every
// report format, the history row, and a JUnit report whose "run valid"
// case fails with the cause.
func TestRefusedTargetIsKept(t *testing.T) {
	reg := suitetest.Registry(t)
	plan := scenariotest.Plan(t, reg, "test.yaml", scenariotest.Refused(testutil.FreeAddr(t), "lost == 0"))
	dir := t.TempDir()
	out, hist := filepath.Join(dir, "result.json"), filepath.Join(dir, "history.db")
	shown := map[string]*bytes.Buffer{}
	var log bytes.Buffer
	p := execute.Params{Registry: reg, Log: &log, Keep: execute.Keep{Out: out, Store: hist},
		Show: func(res *pipebench.Result) error {
			for _, name := range reg.Reporters.Names() {
				rep, err := reg.Reporter(name)
				if err != nil {
					return err
				}
				shown[name] = &bytes.Buffer{}
				if err := rep.Report(shown[name], res); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			return nil
		}}
	if err := p.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := execute.Run(context.Background(), plan, p)
	if o.Code != pipebench.ExitInvalid || o.NotKept || o.Result == nil {
		t.Fatalf("code %d, not kept %v, result %v, err %v; log:\n%s", o.Code, o.NotKept, o.Result != nil, o.Err, log.String())
	}
	if o.Result.Manifest.Status != pipebench.StatusInvalid || !strings.Contains(strings.Join(o.Result.Manifest.Reasons, " "), "connection refused") {
		t.Errorf("status %s, reasons %v", o.Result.Manifest.Status, o.Result.Manifest.Reasons)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatalf("no Result file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the Result file is %v, want readable by its owner only", fi.Mode().Perm())
	}
	if fi, err := os.Stat(hist); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the history is %v (%v), want readable by its owner only", fi.Mode().Perm(), err)
	}
	if got, err := pipebench.ReadResult(out); err != nil || got.Manifest.RunID != o.Result.Manifest.RunID {
		t.Errorf("the file holds %v (%v)", got, err)
	}
	st, err := store.Open(context.Background(), hist)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	saved, err := st.Run(context.Background(), pipebench.RunID(o.Result.Manifest.RunID))
	if err != nil || saved.Manifest.Status != pipebench.StatusInvalid {
		t.Fatalf("history: %v, %v", saved, err)
	}
	var junit struct {
		Suites []struct {
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Text string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(shown["junit"].Bytes(), &junit); err != nil {
		t.Fatalf("junit: %v\n%s", err, shown["junit"])
	}
	if len(junit.Suites) != 1 || junit.Suites[0].Failures == 0 || junit.Suites[0].Cases[0].Name != "run valid" ||
		junit.Suites[0].Cases[0].Failure == nil || !strings.Contains(junit.Suites[0].Cases[0].Failure.Text, "nothing reached") {
		t.Errorf("junit does not fail the run:\n%s", shown["junit"])
	}
	if !strings.Contains(shown["text"].String(), "INVALID") && !strings.Contains(shown["text"].String(), "invalid") {
		t.Errorf("the text report does not say invalid:\n%s", shown["text"])
	}
}

// A Result that cannot go where it was asked (its folder was removed
// during the run) is written to a fallback file, said so, and the exit code
// of a run that would have exited 0 is 1.
func TestResultKeptElsewhere(t *testing.T) {
	reg := suitetest.Registry(t)
	t.Setenv("TMPDIR", t.TempDir())
	gone := filepath.Join(t.TempDir(), "gone")
	res := &pipebench.Result{Schema: pipebench.ResultSchema, Manifest: pipebench.Manifest{RunID: pipebench.NewRunID(time.Now(), ""), Status: pipebench.StatusCompleted}}
	var log bytes.Buffer
	o := execute.KeepResult(context.Background(), res, execute.Params{Registry: reg, Log: &log, Keep: execute.Keep{Out: filepath.Join(gone, "r.json"), NoStore: true}})
	if !o.NotKept || o.Code != pipebench.ExitFailure || o.KeptAt == "" {
		t.Fatalf("%+v\n%s", o, log.String())
	}
	if _, err := os.Stat(o.KeptAt); err != nil {
		t.Errorf("the fallback %s: %v", o.KeptAt, err)
	}
	if !strings.Contains(log.String(), "instead") {
		t.Errorf("the log does not say where the Result went:\n%s", log.String())
	}
}

// A run whose every message the generator builds cannot be carried by the
// protocol (a gRPC message with a field the method's input type has not)
// sent nothing to the system under test: invalid, exit 98, with the cause.
func TestNothingSentIsInvalid(t *testing.T) {
	reg := suitetest.Registry(t)
	plan := scenariotest.Plan(t, reg, "test.yaml", `
name: unfit-messages
sut: {type: healthevents, effect_rate: 50}
target: {driver: grpc, method: pipebench.healthevents.v1.HealthEventService/Report}
workload:
  generator: grpc-message
  message: {no_such_field: 1}
phases:
  - {name: load, duration: 1s, rate: 20/s}
`)
	o := execute.Run(context.Background(), plan, execute.Params{Registry: reg, Keep: execute.Keep{NoStore: true}})
	if o.Result == nil || o.Code != pipebench.ExitInvalid {
		t.Fatalf("code %d, err %v", o.Code, o.Err)
	}
	why := strings.Join(o.Result.Manifest.Reasons, " ")
	if o.Result.Manifest.Status != pipebench.StatusInvalid || !strings.Contains(why, "nothing reached") || !strings.Contains(why, "does not fit") {
		t.Errorf("status %s: %s", o.Result.Manifest.Status, why)
	}
}
