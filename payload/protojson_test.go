package payload

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestMessageTemplate(t *testing.T) {
	g, err := NewMessage(map[string]any{
		"version": uint64(1),
		"events": []any{map[string]any{
			"node_name": "node-{{seq % 3}}",
			"sequence":  "{{seq}}",
			"quote":     `say "hi"\n`,
			"healthy":   false,
			"score":     1.5,
			"when":      "{{now}}",
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := g.Next(7, 3, at)
	defer g.Release(&b)
	lines := strings.Split(string(b.Body), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %s", len(lines), b.Body)
	}
	for i, line := range lines {
		var doc struct {
			Version float64
			Events  []map[string]any
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i, err, line)
		}
		ev := doc.Events[0]
		seq := 7 + i
		if ev["sequence"] != strings.TrimSpace(itoa(seq)) || ev["node_name"] != "node-"+itoa(seq%3) || ev["healthy"] != false ||
			ev["score"] != 1.5 || ev["quote"] != `say "hi"\n` || ev["when"] != "2026-01-02T03:04:05Z" || doc.Version != 1 {
			t.Errorf("line %d: %v", i, ev)
		}
	}
	hdr := map[string]string{}
	for _, h := range b.Headers {
		hdr[h.Name] = h.Value
	}
	if hdr[HeaderSeq] != "7" || hdr[HeaderCount] != "3" || hdr[HeaderSent] != itoa(int(at.UnixNano())) {
		t.Errorf("headers %v", hdr)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestMessageTemplateErrors(t *testing.T) {
	for _, tc := range []struct {
		tree map[string]any
		want string
	}{
		{nil, "message:"},
		{map[string]any{"a": map[string]any{"b": "{{nope}}"}}, "message.a.b: unknown template"},
		{map[string]any{"a": []any{"ok", "{{seq"}}, "message.a[1]"},
	} {
		err := (&MessageConfig{Message: tc.tree}).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.tree, err, tc.want)
		}
	}
}
