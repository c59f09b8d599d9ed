package testutil

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	var n atomic.Int32
	go func() {
		for i := 0; i < 3; i++ {
			n.Add(1)
		}
	}()
	if !Poll(5*time.Second, func() bool { return n.Load() == 3 }) {
		t.Fatal("Poll gave up on a condition that became true")
	}
	start := time.Now()
	if Poll(50*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll reported a false condition true")
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("Poll gave up after %s, before its timeout", el)
	}
}
