package builtins_test

import (
	"context"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/internal/testkit/suitetest"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/sut/all"
)

// TestRunBuiltinScenario runs a built-in scenario the way a Go program
// would, through the importable registry (BuiltinPlan: Registry,
// Scenario, Compile, Scale): the embedded HTTP gateway with its sink,
// scaled to 4 s of load, counted exactly.
func TestRunBuiltinScenario(t *testing.T) {
	plan, reg := suitetest.BuiltinPlan(t, "http-gateway", 4*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := res.Total.Get("sent")
	delivered, _ := res.Total.Get("delivered")
	if sent == 0 || float64(plan.Items()) != sent {
		t.Fatalf("sent %v of %d planned items", sent, plan.Items())
	}
	if delivered != sent {
		t.Fatalf("delivered %v of %v sent through the embedded gateway (status %s: %v)", delivered, sent, res.Manifest.Status, res.Manifest.Reasons)
	}
	if res.Manifest.Status == pipebench.StatusInvalid || res.Manifest.Status == pipebench.StatusAborted {
		t.Fatalf("status %s: %v", res.Manifest.Status, res.Manifest.Reasons)
	}
}

func TestNames(t *testing.T) {
	reg, err := all.Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range builtins.ScenarioNames() {
		if _, err := builtins.Scenario(ref, reg); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
	for _, ref := range builtins.SuiteNames() {
		if _, err := builtins.Suite(ref); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
	if _, err := builtins.Scenario("builtin:no-such", reg); pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Fatalf("an unknown built-in: %v, want a usage error", err)
	}
}
