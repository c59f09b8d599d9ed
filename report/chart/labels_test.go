package chart

import (
	"reflect"
	"testing"

	"github.com/pipebench/pipebench"
)

func TestRunLabels(t *testing.T) {
	run := func(v, c, id string) *pipebench.Result {
		return &pipebench.Result{Manifest: pipebench.Manifest{Version: v, Case: c, RunID: id}}
	}
	for name, tc := range map[string]struct {
		in   []*pipebench.Result
		want []string
	}{
		"versions":      {[]*pipebench.Result{run("0.99", "single", "a"), run("0.100", "single", "b")}, []string{"0.99", "0.100"}},
		"cases":         {[]*pipebench.Result{run("1.0", "blast 10%", "a"), run("1.0", "blast 25%", "b"), run("1.0", "blast 50%", "c")}, []string{"blast 10%", "blast 25%", "blast 50%"}},
		"both":          {[]*pipebench.Result{run("1.0", "a", "x"), run("2.0", "b", "y")}, []string{"1.0 · a", "2.0 · b"}},
		"same version":  {[]*pipebench.Result{run("1.0", "c", "20260101T000000Z-aaaa1111"), run("1.0", "c", "20260101T000000Z-bbbb2222")}, []string{"1.0 · aaaa1111", "1.0 · bbbb2222"}},
		"no version id": {[]*pipebench.Result{run("", "c", "id-1")}, []string{"run · id-1"}},
	} {
		if got := RunLabels(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
