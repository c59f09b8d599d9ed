package jsonsplit

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Arrays split into their elements (strings with escaped quotes, commas
// and brackets, and nested values included) when asked for their number;
// anything else is refused.
func TestArray(t *testing.T) {
	split := map[string][]string{
		`[{"a":1},{"b":"x,]}"},{"c":[1,2,{"d":"\"},"}]}]`: {`{"a":1}`, `{"b":"x,]}"}`, `{"c":[1,2,{"d":"\"},"}]}`},
		` [ {"a":1} , {"b":2} ] `:                         {`{"a":1}`, `{"b":2}`},
		` [{"a":"x,\"y]"},{"b":[1,2]} , 3] `:              {`{"a":"x,\"y]"}`, `{"b":[1,2]}`, `3`},
		`[{"a":"x\\\\"},{"b":"\\\",y"}]`:                  {`{"a":"x\\\\"}`, `{"b":"\\\",y"}`},
		// A quote after an even number of backslashes ends the string.
		`["\\",{"a":"\\\\\"]"}]`: {`"\\"`, `{"a":"\\\\\"]"}`},
		`[]`:                     {},
	}
	for in, elems := range split {
		got := Array([]byte(in), len(elems), nil)
		if got == nil || !slices.EqualFunc(got, elems, func(g []byte, w string) bool { return string(g) == w }) {
			t.Errorf("%s: got %q, want %q", in, got, elems)
		}
		for _, e := range got {
			var v any
			if err := json.Unmarshal(e, &v); err != nil {
				t.Errorf("%s: element %q is not JSON", in, e)
			}
		}
	}
	// Each is refused when asked for this many elements.
	refused := map[string]int{
		`[{"a":1},{"b":2}]`:         3,
		`{"a":1}`:                   1,
		`[{"a":1},,{"b":2}]`:        3,
		`[1,,2,3]`:                  3,
		`[{"a":"unterminated}]`:     1,
		`[1,2,"x]`:                  3,
		`[{"a":1},]`:                1,
		`[{"a":1},{"b":2},{"c":3}]`: 2,
		`[`:                         3,
		`[1]],[2,3]`:                3,
	}
	for in, want := range refused {
		if got := Array([]byte(in), want, nil); got != nil {
			t.Errorf("%s as %d elements: got %q, want it refused", in, want, got)
		}
	}
}

// BenchmarkArray splits a batch of 1,000 events shaped as the event
// generator makes them for the nats benchmark (128 bytes each: the
// sequence number, the send time and padding): under cachegrind,
// instructions an event, whatever the machine's load.
func BenchmarkArray(b *testing.B) {
	body := []byte{'['}
	for i := 0; i < 1000; i++ {
		if i > 0 {
			body = append(body, ',')
		}
		start := len(body)
		body = append(body, `{"pb_seq":`...)
		body = strconv.AppendInt(body, int64(1000000+i), 10)
		body = append(body, `,"pb_sent":"1796212345678901234","data":"`...)
		body = append(body, strings.Repeat("x", 128-(len(body)-start)-2)...)
		body = append(body, `"}`...)
	}
	body = append(body, ']')
	out := make([][]byte, 0, 1000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if out = Array(body, 1000, out); len(out) != 1000 {
			b.Fatalf("%d elements", len(out))
		}
	}
}
