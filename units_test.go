package pipebench

import (
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"4096": 4096, "512MiB": 512 << 20, "1.5 GiB": 3 << 29, "2GB": 2e9, "10 KB": 10e3, "7B": 7, " 1KiB ": 1024,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "12 parsecs", "1e300GiB", "NaN"} {
		if _, err := ParseBytes(in); err == nil || !strings.Contains(err.Error(), "size") {
			t.Errorf("ParseBytes(%q) = %v, want an error about the size", in, err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{300: "300 B", 1 << 20: "1 MiB", 512 << 20: "512 MiB", 3 << 29: "1.5 GiB", 1536: "1.5 KiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
