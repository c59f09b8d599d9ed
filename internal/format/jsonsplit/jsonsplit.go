// Package jsonsplit cuts a batch's JSON array body into its elements
// without decoding it, for the drivers that send each event of a batch as
// a message of its own (kafka, nats). It trusts the generator for what
// lies between the delimiters: it only finds the commas between top-level
// elements, minding strings and nesting.
package jsonsplit

import "bytes"

// Array returns the top-level elements of the JSON array body if it has
// exactly want of them, none empty, else nil. They are appended to out[:0]
// (made when nil) and are slices of body, not copies. A string is skipped
// in one search for its end: most of an event's bytes are its padding.
func Array(body []byte, want int, out [][]byte) [][]byte {
	t := bytes.TrimSpace(body)
	if len(t) < 2 || t[0] != '[' || t[len(t)-1] != ']' {
		return nil
	}
	if out == nil {
		out = make([][]byte, 0, want)
	}
	out = out[:0]
	inner := t[:len(t)-1]
	depth, start := 0, 1
	for i := 1; i < len(inner); i++ {
		switch inner[i] {
		case '"':
			if i = StringEnd(inner, i+1); i < 0 {
				return nil
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				return nil
			}
		case ',':
			if depth == 0 {
				e := bytes.TrimSpace(inner[start:i])
				if len(e) == 0 || len(out) == want {
					return nil
				}
				out = append(out, e)
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil
	}
	if last := bytes.TrimSpace(inner[start:]); len(last) > 0 {
		out = append(out, last)
	} else if len(out) > 0 {
		return nil // a trailing comma
	}
	if len(out) != want {
		return nil
	}
	return out
}

// StringEnd returns the index of the quote that ends the JSON string whose
// contents start at from in b, or -1: the first quote after an even number
// of backslashes (an odd number escapes it). Quotes are found with
// IndexByte, which is vectorised.
func StringEnd(b []byte, from int) int {
	for i := from; i < len(b); {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return -1
		}
		q := i + k
		esc := 0
		for j := q - 1; j >= from && b[j] == '\\'; j-- {
			esc++
		}
		if esc%2 == 0 {
			return q
		}
		i = q + 1
	}
	return -1
}
