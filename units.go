package pipebench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes itself as text ("90s",
// "10m", "48h", "1m30s") in YAML and JSON. The zero value means "not set".
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d the way time.Duration does, without trailing zero units
// ("10m" rather than "10m0s").
func (d Duration) String() string { return FormatDuration(time.Duration(d)) }

// FormatDuration prints d compactly: "10m" rather than "10m0s", "1h30m"
// rather than "1h30m0s". Sub-second durations keep time.Duration's format.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseDuration reads a duration such as "90s", "10m", "48h", "1.5s" or
// "250ms". A bare number is refused: the unit must be explicit.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration: write it with a unit, like 90s, 10m or 48h")
	}
	if strings.HasSuffix(s, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err == nil && n >= 0 && n*24*float64(time.Hour) < math.MaxInt64 {
			return Duration(time.Duration(n * 24 * float64(time.Hour))), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return 0, fmt.Errorf("duration %q has no unit: write %ss, %sm or %sh", s, s, s, s)
		}
		return 0, fmt.Errorf("duration %q is not valid: write it like 90s, 10m, 48h or 1m30s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return Duration(d), nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error { return parseText(b, d, ParseDuration) }

// Rate is a rate in items per second. It reads and writes itself as text:
// "500/s", "30000/min", "2/ms", "0.5/s", "72000/h". A bare number is items per
// second.
type Rate float64

// PerSecond returns r as a float64 count per second.
func (r Rate) PerSecond() float64 { return float64(r) }

// String formats r as "N/s" with no more digits than needed.
func (r Rate) String() string {
	return strconv.FormatFloat(float64(r), 'f', -1, 64) + "/s"
}

// ParseRate reads a rate such as "500/s", "30000/min", "2/ms", "10/h" or a
// bare number of items per second.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	num, unit, found := strings.Cut(s, "/")
	num = strings.TrimSpace(num)
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("rate %q is not valid: write it like 500/s, 30000/min or 2/ms", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("rate %q is negative", s)
	}
	if !found {
		return Rate(n), nil
	}
	var per float64
	switch strings.TrimSpace(unit) {
	case "s", "sec", "second":
		per = 1
	case "ms":
		per = 1e-3
	case "us", "µs":
		per = 1e-6
	case "min", "m", "minute":
		per = 60
	case "h", "hour":
		per = 3600
	default:
		return 0, fmt.Errorf("rate %q has unknown unit %q: use /s, /ms, /min or /h", s, unit)
	}
	return Rate(n / per), nil
}

// MarshalText implements encoding.TextMarshaler.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rate) UnmarshalText(b []byte) error { return parseText(b, r, ParseRate) }

// UnmarshalJSON accepts both the text form ("500/s") and a bare JSON number.
func (r *Rate) UnmarshalJSON(b []byte) error {
	return numberOrText(b, (*float64)(r), r.UnmarshalText, `rate must be a string like "500/s" or a number`)
}

// UnmarshalJSON accepts the text form ("10s") and a bare number of
// nanoseconds, which is how time.Duration marshals.
func (d *Duration) UnmarshalJSON(b []byte) error {
	return numberOrText(b, (*int64)(d), d.UnmarshalText, `duration must be a string like "10s"`)
}

// parseText sets *v to what parse reads in b, and leaves it as it was
// when parse refuses b.
func parseText[T any](b []byte, v *T, parse func(string) (T, error)) error {
	parsed, err := parse(string(b))
	if err != nil {
		return err
	}
	*v = parsed
	return nil
}

// numberOrText reads a bare JSON number into n (the value's underlying
// number, so that its own UnmarshalJSON is not called again), or a JSON
// string with text; anything else is an error saying hint.
func numberOrText[N int64 | float64](b []byte, n *N, text func([]byte) error, hint string) error {
	var v N
	if json.Unmarshal(b, &v) == nil {
		*n = v
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return errors.New(hint)
	}
	return text([]byte(s))
}

// Secret is a string that never appears in any output: its String, text and
// JSON forms are "***". Use it for header values, passwords and tokens in
// configuration; call Reveal where the real value is needed.
type Secret string

// Reveal returns the real value.
func (s Secret) Reveal() string { return string(s) }

// String returns "***" (or "" when empty).
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "***"
}

// MarshalText returns "***" so that secrets never reach a file or a log.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the real value.
func (s *Secret) UnmarshalText(b []byte) error { *s = Secret(b); return nil }

// FormatCount prints a number rounded to a whole with thousands
// separators: 12,345.
func FormatCount(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	if math.Abs(v) >= 1e21 {
		// Past any count a run makes: digits no one reads (1e+308).
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(math.Abs(math.Round(v)), 'f', 0, 64)
	var b strings.Builder
	if math.Round(v) < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// byteUnits are the suffixes ParseBytes takes, longest first.
var byteUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseBytes reads a size in bytes: a whole number ("4096"), or one with a
// unit ("512MiB", "1.5 GB"; KiB MiB GiB TiB are powers of 1,024, KB MB GB TB
// of 1,000).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.n
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%q is not a size: write bytes (4096) or a number with a unit (512MiB, 2GB)", s)
	}
	n := v * float64(mult)
	if n > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large a size", s)
	}
	return int64(math.Round(n)), nil
}

// FormatBytes prints a size with a binary unit: 512 MiB, 1.5 GiB, 300 B.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.n {
			return strconv.FormatFloat(math.Round(100*float64(n)/float64(u.n))/100, 'f', -1, 64) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}

// ByteSize is a size in bytes that reads itself as text: a whole number
// of bytes (4096) or a number with a unit (512MiB, 1.5GB), as ParseBytes
// reads it.
type ByteSize int64

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *ByteSize) UnmarshalText(t []byte) error {
	v, err := ParseBytes(string(t))
	if err != nil {
		return err
	}
	*b = ByteSize(v)
	return nil
}

// String formats the size with a binary unit.
func (b ByteSize) String() string { return FormatBytes(int64(b)) }
