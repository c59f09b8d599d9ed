package suite

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pipebench/pipebench"
)

// Each case's Result file is NN-CASE.json in a folder only its owner
// reads, the case made a file name; no folder, no files.
func TestCaseFiles(t *testing.T) {
	plans := []pipebench.Plan{{Case: "Single Pipeline"}, {Case: "Backpressure / 3 of 4 (Ünïcode)"}, {Case: "--"}}
	none, err := CaseFiles("", plans)
	if err != nil || len(none) != 3 || none[0] != "" {
		t.Fatalf("no folder: %q %v", none, err)
	}
	dir := filepath.Join(t.TempDir(), "out", "cases")
	got, err := CaseFiles(dir, plans)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"01-single-pipeline.json", "02-backpressure-3-of-4-ünïcode.json", "03-case.json"} {
		if got[i] != filepath.Join(dir, want) {
			t.Errorf("case %d: %s, want %s", i, got[i], want)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("folder: %v %v", fi, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := CaseFiles(filepath.Join(file, "sub"), plans); pipebench.ExitCode(err) != pipebench.ExitUsage {
		t.Errorf("a folder that cannot be made: %v", err)
	}
}
