package main

import (
	"strconv"
	"strings"
	"testing"
)

// suiteTable returns the rows of the markdown table under "## NAME" in
// out, each as its cells, the header first.
func suiteTable(t *testing.T, out, name string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "## "+name+"\n")
	if !ok {
		t.Fatalf("no table %s in:\n%s", name, out)
	}
	var rows [][]string
	for _, l := range strings.Split(rest, "\n") {
		l = strings.TrimSpace(l)
		if l == "" && len(rows) > 0 {
			break
		}
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "| ---") || strings.HasPrefix(l, "| :--") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

func checkHeader(t *testing.T, rows [][]string, want ...string) {
	t.Helper()
	if len(rows) == 0 || strings.Join(rows[0], "|") != strings.Join(want, "|") {
		t.Fatalf("header %v, want %v", rows, want)
	}
}

func number(t *testing.T, row []string, i int) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.ReplaceAll(strings.Fields(row[i] + " x")[0], ",", ""), 64)
	if err != nil {
		t.Errorf("row %q: column %d is %q, not a number", row[0], i, row[i])
	}
	return v
}

// The built-in sustained suite at 1 s a case: one row per test (Light,
// Medium, Heavy) in the reference's shape, each at its event rate, against
// the embedded healthevents service over gRPC on a Unix socket.
func TestBuiltinNVSentinelSustainedSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three cases")
	}
	stdout, stderr, code := cli(t, "suite", "run", "builtin:nvsentinel-sustained", "--duration", "1s", "-q", "--no-store")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	rows := suiteTable(t, stdout, "nvsentinel-sustained")
	checkHeader(t, rows, "Test", "Event Rate (/s)", "Request Rate (/s)", "P50 Latency (ms)", "P75 Latency (ms)", "P95 Latency (ms)", "P99 Latency (ms)",
		"Effect Rate (/s)", "Effect P50 (ms)", "Effect P99 (ms)", "Total Events", "Peak Backlog", "Status")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 3:\n%s", len(rows)-1, stdout)
	}
	for i, want := range []struct {
		test string
		rate float64
	}{{"Light", 30}, {"Medium", 100}, {"Heavy", 500}} {
		r := rows[i+1]
		if r[0] != want.test || number(t, r, 1) != want.rate || r[12] != "completed" {
			t.Errorf("row %v, want %s at %g/s, completed", r, want.test, want.rate)
		}
		if acc := number(t, r, 2); acc < 0.8*want.rate || acc > 1.1*want.rate {
			t.Errorf("%s: request rate %g, want about %g", want.test, acc, want.rate)
		}
		number(t, r, 3)  // P50 latency
		number(t, r, 9)  // effect P99, from the effect observer's histogram
		number(t, r, 10) // total events
	}
}

// The built-in burst suite at 1 s a case: seven rows, the three burst
// rates (the extreme one three times), each at its rate in its burst phase.
// On a machine too busy to send 4,200 events/s a case is invalid (exit
// 98), and its row says so.
func TestBuiltinNVSentinelBurstSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seven cases")
	}
	stdout, stderr, code := cli(t, "suite", "run", "builtin:nvsentinel-burst", "--duration", "1s", "-q", "--no-store")
	if code != 0 && code != 98 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	rows := suiteTable(t, stdout, "nvsentinel-burst")
	checkHeader(t, rows, "Test", "Duration", "Event Rate (/s)", "Request Rate (/s)", "P50 Latency (ms)", "P75 Latency (ms)", "P99 Latency (ms)",
		"Effect Rate (/s)", "Effect P50 (ms)", "Effect P99 (ms)", "Peak Backlog", "Refused (/s)", "Status")
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 7:\n%s", len(rows)-1, stdout)
	}
	for i, rate := range []float64{1500, 1500, 3000, 3000, 4200, 4200, 4200} {
		r := rows[i+1]
		if r[12] == "invalid" {
			// Marked, its numbers struck out: not shown as if valid.
			if !strings.Contains(r[0], "INVALID[^") || r[2] != "~~"+strconv.FormatFloat(rate, 'f', -1, 64)+"~~" {
				t.Errorf("invalid row %v not marked", r)
			}
			t.Logf("%s was invalid here (the machine is busy): %v", r[0], r)
			continue
		}
		if !strings.Contains(r[0], "Burst") || number(t, r, 2) != rate || r[12] != "completed" {
			t.Errorf("row %v, want a burst at %g/s, completed", r, rate)
		}
		if acc := number(t, r, 3); acc < 0.7*rate || acc > 1.1*rate {
			t.Errorf("%s: request rate %g in the burst phase, want about %g", r[0], acc, rate)
		}
		number(t, r, 6) // P99 latency of the burst phase
		number(t, r, 9) // effect P99
	}
	if !strings.HasPrefix(rows[7][0], "Extended Extreme Burst") {
		t.Errorf("last row %v", rows[7])
	}
}

// The built-in blast suite (its length is the service's: 150, 375 and 750
// cordons at 50/s, about 26 s): "Scale | Nodes | Time to Complete | Peak
// Queue | Avg Rate" as in the reference, read from the effects. The time to
// complete is count/50 within an observation interval (0.5 s) and the
// effects' first poll; the peak queue near the count.
func TestBuiltinNVSentinelBlastSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three blasts (about 30 s)")
	}
	stdout, stderr, code := cli(t, "suite", "run", "builtin:nvsentinel-blast", "-q", "--no-store")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	rows := suiteTable(t, stdout, "nvsentinel-blast")
	checkHeader(t, rows, "Scale", "Nodes", "Time to Complete (s)", "Peak Queue", "Avg Rate (/s)", "Effect P50 (ms)", "Effect P90 (ms)", "Effect P99 (ms)", "Status")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 3:\n%s", len(rows)-1, stdout)
	}
	for i, want := range []struct {
		scale string
		nodes float64
	}{{"10%", 150}, {"25%", 375}, {"50%", 750}} {
		r := rows[i+1]
		if r[0] != want.scale || number(t, r, 1) != want.nodes || r[8] != "completed" {
			t.Errorf("row %v, want %s of %g nodes, completed", r, want.scale, want.nodes)
		}
		ideal := want.nodes / 50
		if ttc := number(t, r, 2); ttc < ideal*0.95 || ttc > ideal+1.5 {
			t.Errorf("%s: time to complete %g s, want about %g s", want.scale, ttc, ideal)
		}
		if peak := number(t, r, 3); peak < 0.6*want.nodes || peak > want.nodes {
			t.Errorf("%s: peak queue %g, want near %g", want.scale, peak, want.nodes)
		}
		if avg := number(t, r, 4); avg < 0.7*50 || avg > 52 {
			t.Errorf("%s: average rate %g/s, want about 50/s", want.scale, avg)
		}
		// Events waited in the queue for up to the whole blast: the p99
		// near the time to complete, the p50 about half of it.
		p50, p99 := number(t, r, 5), number(t, r, 7)
		if p99 < 0.7*ideal*1000 || p50 > 0.7*p99 {
			t.Errorf("%s: effect p50 %g ms, p99 %g ms; the blast took about %g s", want.scale, p50, p99, ideal)
		}
	}
}
