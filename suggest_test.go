package pipebench

import "testing"

func TestSuggest(t *testing.T) {
	for in, want := range map[string]string{"rtae": "rate", "duraton": "duration", "conections": "connections", "zzz": "", "Rate": "rate", "dur": "duration"} {
		if got := Suggest(in, []string{"rate", "duration", "connections", "name"}); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
