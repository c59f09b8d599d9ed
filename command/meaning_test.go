package command

import (
	"bytes"
	"html"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/metricsout"
	htmlreport "github.com/pipebench/pipebench/report/html"
)

// The documentation (docs/numbers.md, "What the numbers mean"),
// `pipebench run --help`, the Prometheus HELP text of the latency
// histogram and the HTML report say the same thing about latency and about
// what sent, held_back and missed count: the words of
// pipebench.MeaningLatency and MeaningSent, whitespace aside.
func TestLatencyMeansTheSameEverywhere(t *testing.T) {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	numbers, err := os.ReadFile("../docs/numbers.md")
	if err != nil {
		t.Fatal(err)
	}
	help, _, code := cli(t, "run", "--help")
	if code != 0 {
		t.Fatalf("run --help exited %d", code)
	}
	var page bytes.Buffer
	now := time.Now()
	res := &pipebench.Result{Manifest: pipebench.Manifest{Scenario: "x", Status: pipebench.StatusCompleted, Started: now, Ended: now},
		Phases: []pipebench.PhaseResult{{Name: "p", Started: now, Ended: now.Add(time.Second)}}}
	if err := htmlreport.Write(&page, res); err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page.String(), " ")
	places := map[string]string{
		"docs/numbers.md":                  string(numbers),
		"run --help":                       help,
		"the HTML report":                  html.UnescapeString(text),
		metricsout.MetricLatency + " HELP": metricsout.Help(metricsout.MetricLatency),
		metricsout.MetricSent + " HELP":    metricsout.Help(metricsout.MetricSent),
	}
	for what, words := range map[string]string{"latency": pipebench.MeaningLatency, "sent": pipebench.MeaningSent} {
		for place, got := range places {
			if strings.HasSuffix(place, " HELP") && !strings.Contains(place, "_"+what) {
				continue // each family says its own meaning
			}
			if !strings.Contains(norm(got), norm(words)) {
				t.Errorf("%s does not say what %s means, in the words of pipebench.Meaning: %q", place, what, words)
			}
		}
	}
}

// The documentation (docs/numbers.md, "The ledger") says what the ledger
// means in the words of pipebench.MeaningLedger.
func TestLedgerMeansWhatTheDocsSay(t *testing.T) {
	numbers, err := os.ReadFile("../docs/numbers.md")
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if !strings.Contains(norm(string(numbers)), norm(pipebench.MeaningLedger)) {
		t.Errorf("docs/numbers.md does not say what the ledger means in the words of pipebench.MeaningLedger: %q", pipebench.MeaningLedger)
	}
}
