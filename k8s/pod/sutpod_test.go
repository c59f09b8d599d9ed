package pod

import (
	"bufio"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// echo serves a line-echo on ln until it is closed.
func echo(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				c.Write([]byte("echo " + l))
			}
		}()
	}
}

// The system under test's pod reaches what listens on loopback or on a
// Unix socket from its own address: every endpoint form is published on
// the pod's address, one forwarder per address however many endpoints
// name it, and bytes go both ways through it.
func TestForwarders(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go echo(tcp)
	sock := filepath.Join(t.TempDir(), "sut.sock")
	unix, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	go echo(unix)

	// The pod's address: another loopback address than the system's.
	fw := &forwarders{ip: "127.0.0.2", by: map[string]string{}}
	defer fw.close()
	addr := tcp.Addr().String()
	for _, tc := range []struct{ in, prefix, suffix string }{
		{"http://" + addr + "/events", "http://127.0.0.2:", "/events"},
		{"http://" + addr + "/metrics", "http://127.0.0.2:", "/metrics"},
		{addr, "127.0.0.2:", ""},
		{"unix://" + sock, "127.0.0.2:", ""},
	} {
		pub, err := fw.publish(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if !strings.HasPrefix(pub, tc.prefix) || !strings.HasSuffix(pub, tc.suffix) {
			t.Errorf("%s published as %s", tc.in, pub)
		}
		hostport := strings.TrimSuffix(strings.TrimPrefix(pub, "http://"), tc.suffix)
		c, err := net.Dial("tcp", hostport)
		if err != nil {
			t.Fatalf("%s: dial the forwarder %s: %v", tc.in, hostport, err)
		}
		c.Write([]byte("hello\n"))
		got, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || got != "echo hello\n" {
			t.Errorf("%s through %s: %q, %v", tc.in, pub, got, err)
		}
	}
	if n := len(fw.ls); n != 2 {
		t.Errorf("%d forwarders for two addresses", n)
	}
	if _, err := fw.publish("http://no-port.example/x"); err == nil {
		t.Error("an endpoint without a port was published")
	}
}
