package loglines

import (
	"bytes"
	"strconv"
	"time"
)

var (
	keySeq  = []byte("pb_seq")
	keySent = []byte("pb_sent")
)

// Extract returns the sequence number and send time a line carries, in any
// of the formats, also after a pipeline escaped it into a JSON string or
// turned it into fields: it looks for pb_seq and pb_sent, each followed by
// one to six separators (= : " \ space) and a decimal number. ok is false
// when either is missing or out of range.
func Extract(line []byte) (seq uint64, sent time.Time, ok bool) {
	s, ok := number(line, keySeq)
	if !ok {
		return 0, time.Time{}, false
	}
	ns, ok := number(line, keySent)
	if !ok || ns > 1<<63-1 {
		return 0, time.Time{}, false
	}
	return s, time.Unix(0, int64(ns)), true
}

// ExtractLines calls fn for every line of body that carries a sequence
// number and counts the non-empty lines that do not.
func ExtractLines(body []byte, fn func(seq uint64, sent time.Time)) (matched, unmatched int) {
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if seq, sent, ok := Extract(line); ok {
			fn(seq, sent)
			matched++
		} else {
			unmatched++
		}
	}
	return matched, unmatched
}

func number(line, key []byte) (uint64, bool) {
	for off := 0; off < len(line); {
		i := bytes.Index(line[off:], key)
		if i < 0 {
			return 0, false
		}
		j := off + i + len(key)
		k := j
		for k < len(line) && k-j < 6 && isSep(line[k]) {
			k++
		}
		d := k
		for d < len(line) && line[d] >= '0' && line[d] <= '9' {
			d++
		}
		if k > j && d > k {
			v, err := strconv.ParseUint(string(line[k:d]), 10, 64)
			return v, err == nil
		}
		off = j
	}
	return 0, false
}

func isSep(c byte) bool { return c == '=' || c == ':' || c == '"' || c == '\\' || c == ' ' }
