package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Extract calls fn for every item a request carries, with its sequence
// number and send time, following the wire convention (see the package
// doc). header looks up a request header, case-insensitively. It returns the
// number of items matched and the number that carried no sequence number.
func Extract(header func(name string) string, contentType string, body []byte, fn func(seq uint64, sent time.Time)) (matched, unmatched int, err error) {
	count := 1
	if c := header(HeaderCount); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			return 0, 0, fmt.Errorf("%s %q is not a count", HeaderCount, c)
		}
		count = n
	}
	if s := header(HeaderSeq); s != "" {
		return fromHeaders(s, header(HeaderSent), count, fn)
	}
	if s := header("ce-pbseq"); s != "" {
		return fromHeaders(s, header("ce-pbsent"), 1, fn)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return 0, count, nil
	}
	var items []seqFields
	if body[0] == '[' {
		if err := json.Unmarshal(body, &items); err != nil {
			return 0, 0, fmt.Errorf("body is not a JSON array of events: %w", err)
		}
	} else {
		var one seqFields
		if err := json.Unmarshal(body, &one); err != nil {
			return 0, 0, fmt.Errorf("body is not a JSON event: %w", err)
		}
		items = []seqFields{one}
	}
	for _, it := range items {
		seqS, sentS := string(it.Seq), string(it.Sent)
		if seqS == "" {
			seqS, sentS = string(it.CESeq), string(it.CESent)
		}
		seq, err1 := strconv.ParseUint(seqS, 10, 64)
		ns, err2 := strconv.ParseInt(sentS, 10, 64)
		if seqS == "" || err1 != nil || err2 != nil {
			unmatched++
			continue
		}
		fn(seq, time.Unix(0, ns))
		matched++
	}
	return matched, unmatched, nil
}

// seqFields picks the sequence fields out of an event object: "pb_seq"
// and "pb_sent" of a plain event, "pbseq" and "pbsent" of a CloudEvent.
// Numbers and strings are both accepted.
type seqFields struct {
	Seq    flexString `json:"pb_seq"`
	Sent   flexString `json:"pb_sent"`
	CESeq  flexString `json:"pbseq"`
	CESent flexString `json:"pbsent"`
}

// flexString accepts a JSON string or number.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	*f = flexString(bytes.Trim(b, `"`))
	return nil
}

func fromHeaders(seqS, sentS string, count int, fn func(uint64, time.Time)) (int, int, error) {
	seq, err := strconv.ParseUint(seqS, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("sequence number %q is not a number", seqS)
	}
	ns, err := strconv.ParseInt(sentS, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("send time %q is not unix nanoseconds", sentS)
	}
	sent := time.Unix(0, ns)
	for i := 0; i < count; i++ {
		fn(seq+uint64(i), sent)
	}
	return count, 0, nil
}

// ItemCount is the number of items a message says it carries in its
// HeaderCount header (looked up with header); 1 when the header is
// missing or not a positive number.
func ItemCount(header func(name string) string) int {
	n, err := strconv.Atoi(header(HeaderCount))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Tally is Extract for a consumer that accounts for every item of a
// message: the content type is the Content-Type header, and when the body
// cannot be read, all the ItemCount items the message announces count as
// unmatched. It returns the items in all and the unmatched ones among
// them.
func Tally(header func(name string) string, body []byte, fn func(seq uint64, sent time.Time)) (items, unmatched int) {
	matched, unmatched, err := Extract(header, header("Content-Type"), body, fn)
	if err != nil {
		unmatched = ItemCount(header)
	}
	return matched + unmatched, unmatched
}
