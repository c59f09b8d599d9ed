package kpi

import (
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

func phase() *pipebench.PhaseResult {
	return &pipebench.PhaseResult{Name: "load", KPIs: []pipebench.KPI{
		{Name: "latency.p99", Value: 120},
		{Name: "sent_rate", Value: 1000},
		{Name: "delivered_rate", Value: 995},
		{Name: "lost", Value: 0},
		{Name: "errors", Labels: map[string]string{"class": "timeout"}, Value: 3},
		{Name: "errors", Labels: map[string]string{"class": "refused"}, Value: 2},
		{Name: "memory_mb", Labels: map[string]string{"instance": "a"}, Value: 100},
		{Name: "memory_mb", Labels: map[string]string{"instance": "b"}, Value: 300},
	}}
}

func TestThresholdEval(t *testing.T) {
	for expr, want := range map[string][]bool{
		"latency.p99 < 500ms":                 {true},
		"latency.p99 < 0.1s":                  {false},
		"delivered_rate >= 0.99 * sent_rate":  {true},
		"delivered_rate >= 0.999 * sent_rate": {false},
		"lost == 0":                           {true},
		`errors{class="timeout"} == 0`:        {false},
		"errors <= 5":                         {true},
		"max(memory_mb) < 256":                {false},
		"avg(memory_mb) <= 200":               {true},
		"memory_mb < 200":                     {true, false},
		"sent_rate > 900/s":                   {true},
	} {
		th, err := ParseThreshold(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		res := EvalThreshold(th, phase())
		if len(res) != len(want) {
			t.Errorf("%s: %d results, want %d", expr, len(res), len(want))
			continue
		}
		for i := range res {
			if res[i].Passed != want[i] {
				t.Errorf("%s [%d]: passed %v, want %v (%+v)", expr, i, res[i].Passed, want[i], res[i])
			}
			if !res[i].Passed && res[i].Message == "" {
				t.Errorf("%s: failed without a message", expr)
			}
		}
	}
}

func TestThresholdParseErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"":                      "threshold is empty",
		"latency.p99":           "has no comparison",
		"latency.p99 <":         "needs something on both sides",
		"latncy.p99 < 5ms":      `unknown KPI "latncy.p99" (did you mean "latency.p99"?)`,
		"1 < 2":                 "compares two constants",
		"sent_rate * 2 > 5":     "only a number may multiply a KPI",
		`errors{class=x} > 1`:   "label",
		"delivered_rate > fast": `unknown KPI "fast"`,
		"sent_rate > 5 apples":  "is not a number, a duration, a rate or a KPI name",
	} {
		_, err := ParseThreshold(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", expr, err, want)
		}
	}
}

func TestThresholdOnMissingKPIFails(t *testing.T) {
	th, _ := ParseThreshold("e2e_latency.p99 < 1s")
	res := EvalThreshold(th, phase())
	if len(res) != 1 || res[0].Passed || !strings.Contains(res[0].Message, "was not measured") {
		t.Errorf("%+v", res)
	}
}
