package residency

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// A relocation table the loader wrote and made read-only (RELRO) holds
// anonymous pages: it is never advised; the executable's clean read-only
// mappings are, and nothing writable or of another file is.
func TestCleanReadOnlyMappings(t *testing.T) {
	const smaps = `00400000-00500000 r-xp 00000000 fe:00 11633816                           /opt/pb
Size:               1024 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw sd
00500000-00600000 r--p 00100000 fe:00 11633816                           /opt/pb
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
00600000-00601000 r--p 00200000 fe:00 11633816                           /opt/pb
Anonymous:             4 kB
VmFlags: rd mr mw me dw ac sd
00601000-00700000 rw-p 00201000 fe:00 11633816                           /opt/pb
Anonymous:           500 kB
00700000-00800000 r--p 00000000 fe:00 42                                 /usr/lib/libc.so.6
Anonymous:             0 kB
00800000-00900000 rw-p 00000000 00:00 0 
Anonymous:           100 kB
00900000-00a00000 r--s 00000000 fe:00 11633816                           /opt/pb
Anonymous:             0 kB
`
	got, err := cleanReadOnly(strings.NewReader(smaps), "/opt/pb")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]uintptr{{0x400000, 0x500000}, {0x500000, 0x600000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("advised %x, want %x", got, want)
	}
}

// On this test binary itself: Trim advises its read-only mappings, the
// resident part of them falls (read back from /proc/self/smaps, the
// kernel's own count), and the code keeps running.
func TestTrimDropsTheExecutablesPages(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	before := residentOf(t, exe)
	n, err := Trim()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("nothing advised (the executable's read-only mappings held %d kB)", before)
	}
	after := residentOf(t, exe)
	t.Logf("advised %d kB of mappings; their resident part %d kB before, %d kB after", n>>10, before, after)
	if after >= before {
		t.Errorf("resident kB of the executable's read-only mappings: %d before, %d after Trim", before, after)
	}
	// Code and read-only data are read back from the page cache.
	if s := strconv.Itoa(12345) + strings.Repeat("x", 2); s != "12345xx" {
		t.Errorf("got %q", s)
	}
}

// residentOf sums the Rss of path's read-only private mappings.
func residentOf(t *testing.T, path string) int {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	total, counting := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		if _, _, header, ok := mapping(line, path); header {
			counting = ok
			continue
		}
		if f := strings.Fields(line); counting && len(f) >= 2 && f[0] == "Rss:" {
			kb, _ := strconv.Atoi(f[1])
			total += kb
		}
	}
	return total
}
