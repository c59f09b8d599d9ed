package yamlnode

import "testing"

func TestSortAndFormat(t *testing.T) {
	ps := []Problem{{File: "f.yaml", Line: 3, Column: 2, Path: "b", Msg: "late"}, {File: "f.yaml", Line: 1, Column: 5, Path: "a", Msg: "early"}}
	Sort(ps)
	want := "suite f.yaml is not valid (2 problems):\n  f.yaml:1:5: a: early\n  f.yaml:3:2: b: late"
	if got := Format("suite", ps); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := Format("scenario", ps[:1]); got != "scenario f.yaml is not valid (1 problem):\n  f.yaml:1:5: a: early" {
		t.Errorf("one problem: %q", got)
	}
	if (Problem{File: "f", Msg: "m"}).String() != "f: m" {
		t.Error("a problem without a place")
	}
}
