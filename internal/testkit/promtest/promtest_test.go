package promtest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A page in the text format comes back by family; its samples are the
// page's.
func TestFamilies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("# TYPE a_total counter\na_total{k=\"v\"} 3\nb 2.5\n"))
	}))
	defer srv.Close()
	fams := Families(t, srv.URL)
	if v := fams["a_total"].GetMetric()[0].GetCounter().GetValue(); v != 3 {
		t.Errorf("a_total %v, want 3", v)
	}
	if len(fams) != 2 || fams["b"] == nil {
		t.Errorf("families %v, want a_total and b", fams)
	}
}
