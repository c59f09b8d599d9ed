// Package residency keeps pipebench's resident memory to what the run
// needs: the executable's read-only pages that a process touched once,
// while its packages were initialised, are dropped (Trim), and a large
// live heap is not let double between two collections (Collector).
//
// pipebench is one binary of about 240 MB: the embedded OpenTelemetry
// Collector with its contrib components, nats-server, a Kafka client, the
// Kubernetes client. Go initialises each of its ~950 packages before main,
// and the kernel maps the 64 KiB around every page those initialisers read
// (fault-around), so a process that has done nothing yet holds some 150 MB
// of the binary's code and read-only data in its resident set (measured with
// /proc/self/smaps on `pipebench sink`, idle: 171 MB resident, 150 MB of it
// the binary's clean pages, 16 MB anonymous). None of it is the load's.
//
// Trim drops those pages from the process's page tables (madvise
// MADV_DONTNEED): they stay in the page cache, clean and shared, and a later
// read maps them again at the cost of a minor fault, so that from then on
// the resident set holds the executable's pages the process goes on
// reading (with fault-around, the 64 KiB about each). Writable mappings,
// and read-only ones holding a page written before they were made
// read-only, are never touched.
package residency

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Trim applies the above to every read-only, private mapping of the running
// executable that holds no page of its own (a relocation table the dynamic
// loader wrote and then made read-only holds copies that exist nowhere
// else: dropping them would lose them) and returns how many bytes of
// mappings it advised. It is a no-op, returning 0 and no error, where
// /proc/self/smaps cannot be read.
func Trim() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, nil
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, nil
	}
	ranges, err := cleanReadOnly(f, exe)
	f.Close()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1]-r[0], syscall.MADV_DONTNEED); errno != 0 {
			return total, fmt.Errorf("madvise %#x-%#x: %w", r[0], r[1], errno)
		}
		total += int64(r[1] - r[0])
	}
	return total, nil
}

// cleanReadOnly reads smaps and returns the ranges of path's read-only
// private mappings that have no anonymous (copied-on-write) page.
func cleanReadOnly(smaps io.Reader, path string) ([][2]uintptr, error) {
	var ranges [][2]uintptr
	keep := false // whether the mapping being read qualifies so far
	var lo, hi uintptr
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Text()
		if l, h, header, ok := mapping(line, path); header {
			if keep {
				ranges = append(ranges, [2]uintptr{lo, hi})
			}
			lo, hi, keep = l, h, ok
			continue
		}
		if keep && strings.HasPrefix(line, "Anonymous:") {
			if f := strings.Fields(line); len(f) < 2 || f[1] != "0" {
				keep = false // written before it was made read-only
			}
		}
	}
	if keep {
		ranges = append(ranges, [2]uintptr{lo, hi})
	}
	return ranges, sc.Err()
}

// mapping parses a line of /proc/self/smaps: whether it is a mapping's
// header, and whether that mapping is one of path's that can be neither
// written nor shared ("r--p" or "r-xp"), with its range.
func mapping(line, path string) (lo, hi uintptr, header, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 5 || strings.HasSuffix(fields[0], ":") {
		return 0, 0, false, false
	}
	from, to, found := strings.Cut(fields[0], "-")
	if !found {
		return 0, 0, false, false
	}
	a, err1 := strconv.ParseUint(from, 16, 64)
	b, err2 := strconv.ParseUint(to, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false, false
	}
	perms := fields[1]
	if len(fields) < 6 || fields[5] != path || b <= a || len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
		return 0, 0, true, false
	}
	return uintptr(a), uintptr(b), true, true
}
