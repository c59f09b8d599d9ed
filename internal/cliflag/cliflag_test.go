package cliflag

import (
	"strings"
	"testing"
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
