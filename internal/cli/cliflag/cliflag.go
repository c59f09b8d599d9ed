// Package cliflag holds command-line flag values that check what they are
// given, so that a number no command can use is refused with its flag's
// name before anything runs (and, through cobra, with exit code 2).
package cliflag

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Float is a float64 flag (a pflag.Value) that refuses NaN, infinities and
// negative numbers, and whatever its optional bounds exclude. Build it with
// NonNegative, narrow it with Positive, Below and AtMost, and register it
// with FlagSet.Var.
type Float struct {
	p        *float64
	positive bool    // refuse 0
	below    float64 // refuse this and above (NaN: no bound)
	atMost   float64 // refuse above this (NaN: no bound)
}

// NonNegative sets *p to def and returns the flag that sets *p to finite
// numbers of 0 or more.
func NonNegative(p *float64, def float64) *Float {
	*p = def
	return &Float{p: p, below: math.NaN(), atMost: math.NaN()}
}

// Positive refuses 0 as well.
func (f *Float) Positive() *Float { f.positive = true; return f }

// Below refuses max and anything above it (a level of confidence < 1).
func (f *Float) Below(max float64) *Float { f.below = max; return f }

// AtMost refuses anything above max (a ratio <= 1).
func (f *Float) AtMost(max float64) *Float { f.atMost = max; return f }

// Set parses and checks s; the error says what the flag takes.
func (f *Float) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("not a number: give %s", f.want())
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (f.positive && v == 0) ||
		(!math.IsNaN(f.below) && v >= f.below) || (!math.IsNaN(f.atMost) && v > f.atMost) {
		return fmt.Errorf("out of range: give %s", f.want())
	}
	*f.p = v
	return nil
}

// want describes the values the flag takes.
func (f *Float) want() string {
	w := "a finite number, 0 or more"
	if f.positive {
		w = "a finite number more than 0"
	}
	switch {
	case !math.IsNaN(f.below):
		w += " and less than " + strconv.FormatFloat(f.below, 'g', -1, 64)
	case !math.IsNaN(f.atMost):
		w += " and at most " + strconv.FormatFloat(f.atMost, 'g', -1, 64)
	}
	return w
}

// String returns the current value.
func (f *Float) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64)
}

// Type names the flag's kind in help.
func (f *Float) Type() string { return "float" }

// NonNegativeDurations makes every duration flag of fs refuse a negative
// duration (--metrics-linger -1s, --ready-timeout -1s), naming the flag:
// no command has a use for one. Called on every command of a tree once it
// is built, it covers flags added later too.
func NonNegativeDurations(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if _, done := f.Value.(nonNegative); !done && f.Value.Type() == "duration" {
			f.Value = nonNegative{f.Value}
		}
	})
}

// nonNegative is a duration flag that refuses negative durations.
type nonNegative struct{ pflag.Value }

func (d nonNegative) Set(s string) error {
	if v, err := time.ParseDuration(strings.TrimSpace(s)); err == nil && v < 0 {
		return fmt.Errorf("%s is negative: give a duration of 0 or more, like 30s", s)
	}
	return d.Value.Set(s)
}
