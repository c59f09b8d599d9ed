package payload

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// template is a field value compiled once: literal text and functions
// evaluated per item, with no text/template on the hot path.
//
//	{{seq}}            the item's sequence number
//	{{seq % 100}}      sequence number modulo N
//	{{rand 1000}}      a random number in [0, N)
//	{{choice eu us}}   one of the words, at random
//	{{uuid}}           a random UUID
//	{{now}}            the send time, RFC 3339
type template struct {
	parts []part
}

type part struct {
	lit     string
	fn      string // "", "seq", "mod", "rand", "choice", "uuid", "now"
	n       uint64
	choices []string
}

// fieldErrors checks the templates of a generator's fields key: one error
// per field that does not compile, prefixed with its key path.
func fieldErrors(fields map[string]string) []error {
	var errs []error
	for k, v := range fields {
		if _, err := compileTemplate(v); err != nil {
			errs = append(errs, fmt.Errorf("fields: %s: %v", k, err))
		}
	}
	return errs
}

func compileTemplate(s string) (template, error) {
	var t template
	for s != "" {
		i := strings.Index(s, "{{")
		if i < 0 {
			t.parts = append(t.parts, part{lit: s})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, part{lit: s[:i]})
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return t, fmt.Errorf("%q has {{ without }}", s)
		}
		expr := strings.Fields(s[i+2 : i+j])
		s = s[i+j+2:]
		if len(expr) == 0 {
			return t, fmt.Errorf("empty {{}}")
		}
		p := part{fn: expr[0]}
		switch {
		case expr[0] == "seq" && len(expr) == 1:
		case expr[0] == "seq" && len(expr) == 3 && expr[1] == "%":
			n, err := strconv.ParseUint(expr[2], 10, 64)
			if err != nil || n == 0 {
				return t, fmt.Errorf("{{seq %% N}} needs a whole N > 0, got %q", expr[2])
			}
			p.fn, p.n = "mod", n
		case expr[0] == "rand" && len(expr) == 2:
			n, err := strconv.ParseUint(expr[1], 10, 64)
			if err != nil || n == 0 {
				return t, fmt.Errorf("{{rand N}} needs a whole N > 0, got %q", expr[1])
			}
			p.n = n
		case expr[0] == "choice" && len(expr) >= 2:
			p.choices = expr[1:]
		case (expr[0] == "uuid" || expr[0] == "now") && len(expr) == 1:
		default:
			return t, fmt.Errorf("unknown template {{%s}}: use seq, seq %% N, rand N, choice A B, uuid or now", strings.Join(expr, " "))
		}
		t.parts = append(t.parts, p)
	}
	return t, nil
}

// appendTo appends the value for item seq sent at at.
func (t template) appendTo(b []byte, seq uint64, at time.Time) []byte {
	for _, p := range t.parts {
		switch p.fn {
		case "":
			b = append(b, p.lit...)
		case "seq":
			b = strconv.AppendUint(b, seq, 10)
		case "mod":
			b = strconv.AppendUint(b, seq%p.n, 10)
		case "rand":
			b = strconv.AppendUint(b, rand.Uint64N(p.n), 10)
		case "choice":
			b = append(b, p.choices[rand.IntN(len(p.choices))]...)
		case "uuid":
			var u [16]byte
			_, _ = cryptoRead(u[:])
			u[6], u[8] = (u[6]&0x0f)|0x40, (u[8]&0x3f)|0x80
			var h [36]byte
			hex.Encode(h[0:8], u[0:4])
			h[8] = '-'
			hex.Encode(h[9:13], u[4:6])
			h[13] = '-'
			hex.Encode(h[14:18], u[6:8])
			h[18] = '-'
			hex.Encode(h[19:23], u[8:10])
			h[23] = '-'
			hex.Encode(h[24:], u[10:])
			b = append(b, h[:]...)
		case "now":
			b = at.UTC().AppendFormat(b, time.RFC3339Nano)
		}
	}
	return b
}

var cryptoRead = crand.Read
