// Package promtest runs Prometheus for tests (Prometheus) and reads what
// a component under test serves in the Prometheus text format (Families).
package promtest

import (
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families GETs url and returns its metric families by name. It fails
// the test when the request fails, the answer is not 200 OK, or its body
// is not the Prometheus text format.
func Families(tb testing.TB, url string) map[string]*dto.MetricFamily {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		tb.Fatalf("%s: HTTP %d %s", url, resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return fams
}
