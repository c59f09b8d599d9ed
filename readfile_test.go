package pipebench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
)

// DecodeResult, one element at a time, decodes what json.Unmarshal
// decodes; a field of a newer pipebench is skipped; its checks see each
// part and stop it.
func TestDecodeResultIsUnmarshal(t *testing.T) {
	r := resulttest.Pipeline("1.0", "c", 20000)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var want pipebench.Result
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	got, err := pipebench.DecodeResult(bytes.NewReader(b), pipebench.ResultCheck{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("DecodeResult differs from json.Unmarshal:\n%+v\n%+v", *got, want)
	}
	newer := bytes.Replace(b, []byte(`{"schema":1,`), []byte(`{"schema":1,"future":{"a":[1,2]},`), 1)
	if _, err := pipebench.DecodeResult(bytes.NewReader(newer), pipebench.ResultCheck{}); err != nil {
		t.Errorf("a field it does not know: %v", err)
	}
	stop := errors.New("stop")
	seen := 0
	_, err = pipebench.DecodeResult(bytes.NewReader(b), pipebench.ResultCheck{Series: func(i int, s *pipebench.Series) error {
		seen++
		if i == 1 {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) || seen != 2 {
		t.Errorf("a check's error: %v after %d series", err, seen)
	}
}

// ReadInput refuses a folder, a file past its limit, and, asked for a
// regular file, a device; a context done ends the wait for a FIFO's
// writer at once.
func TestReadInput(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("hello"), 0o600)
	if b, err := pipebench.ReadInput(context.Background(), pipebench.Input{Path: small, Limit: 5}); err != nil || string(b) != "hello" {
		t.Errorf("a file at its limit: %q %v", b, err)
	}
	for _, tc := range []struct {
		in   pipebench.Input
		want string
	}{
		{pipebench.Input{Path: small, What: "x", Limit: 4}, "x " + small + " is larger than 4 B"},
		{pipebench.Input{Path: dir, What: "x"}, "is a folder"},
		{pipebench.Input{Path: "/dev/null", What: "x", Regular: true}, "not a regular file but a character device"},
		{pipebench.Input{Path: filepath.Join(dir, "none"), What: "x"}, "does not exist"},
	} {
		if _, err := pipebench.ReadInput(context.Background(), tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := pipebench.ReadInput(context.Background(), pipebench.Input{Path: filepath.Join(dir, "none")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file is not os.ErrNotExist: %v", err)
	}
}
