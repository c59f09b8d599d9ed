package cliflag

import (
	"errors"

	"github.com/spf13/cobra"

	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

func TestFloatRefusesWhatNoCommandCanUse(t *testing.T) {
	var x float64
	f := NonNegative(&x, 0.1)
	if x != 0.1 || f.String() != "0.1" {
		t.Fatalf("default: %v %q", x, f.String())
	}
	for _, s := range []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "infinity", "-0.1", "-1e-300", "1e400", "ten", "", "0x"} {
		if err := f.Set(s); err == nil {
			t.Errorf("%q accepted: %v", s, x)
		} else if !strings.Contains(err.Error(), "0 or more") {
			t.Errorf("%q: %v", s, err)
		}
	}
	if x != 0.1 {
		t.Errorf("a refused value changed the flag: %v", x)
	}
	for in, want := range map[string]float64{"0": 0, "0.25": 0.25, " 3 ": 3, "1e-3": 0.001} {
		if err := f.Set(in); err != nil || x != want {
			t.Errorf("%q: %v %v", in, x, err)
		}
	}
	var c float64
	conf := NonNegative(&c, 0.9).Positive().Below(1)
	for _, s := range []string{"0", "1", "1.5", "NaN"} {
		if err := conf.Set(s); err == nil || !strings.Contains(err.Error(), "more than 0 and less than 1") {
			t.Errorf("confidence %q: %v", s, err)
		}
	}
	if err := conf.Set("0.95"); err != nil || c != 0.95 {
		t.Errorf("0.95: %v %v", c, err)
	}
	var r float64
	ratio := NonNegative(&r, 0).AtMost(1)
	if ratio.Set("1") != nil || ratio.Set("1.01") == nil {
		t.Errorf("at most 1: %v", r)
	}
}

// pflag's messages become usage errors that say what to write.
func TestError(t *testing.T) {
	cmd := &cobra.Command{Use: "run"}
	cmd.Flags().Duration("duration", 0, "")
	cmd.Flags().Int("shards", 1, "")
	cmd.Flags().String("format", "", "")
	for _, c := range []struct{ args, msg, hint string }{
		{"--formt=md", "unknown flag --formt (did you mean --format?)", "see pipebench run --help"},
		{"--zzz", "unknown flag --zzz", "see pipebench run --help"},
		{"--duration=30", `--duration "30" is not a valid duration`, "write a number with a unit: 30s, 5m, 1h30m"},
		{"--shards=two", `--shards "two" is not a valid whole number`, "write a whole number"},
	} {
		perr := cmd.ParseFlags([]string{c.args})
		if perr == nil {
			t.Fatalf("%s parsed", c.args)
		}
		if !IsUsage(perr) {
			t.Errorf("%s: %v not seen as usage", c.args, perr)
		}
		err := Error(cmd, perr)
		var pe *pipebench.Error
		if !errors.As(err, &pe) || pe.Code != pipebench.ExitUsage || pe.Msg != c.msg || pe.Hint != c.hint {
			t.Errorf("%s: %#v", c.args, err)
		}
	}
}

// A subcommand's hint names its whole path, as the user types it.
func TestErrorNamesTheCommandPath(t *testing.T) {
	root := &cobra.Command{Use: "pipebench-load"}
	k8s := &cobra.Command{Use: "k8s"}
	manifests := &cobra.Command{Use: "manifests"}
	manifests.Flags().String("load-image", "", "")
	root.AddCommand(k8s)
	k8s.AddCommand(manifests)
	perr := manifests.ParseFlags([]string{"--load-imag=x"})
	var pe *pipebench.Error
	if err := Error(manifests, perr); !errors.As(err, &pe) || pe.Hint != "see pipebench-load k8s manifests --help" || !strings.Contains(pe.Msg, "did you mean --load-image?") {
		t.Errorf("%#v", err)
	}
}
