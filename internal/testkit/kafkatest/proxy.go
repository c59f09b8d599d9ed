package kafkatest

import (
	"net"
	"sync"
	"time"
)

// Mode is how a Proxy treats its connections.
type Mode int

// The modes of a Proxy.
const (
	Pass Mode = iota // forward both ways
	Hold             // accept and keep connections, forward nothing: the broker seems silent
)

// Proxy forwards TCP connections on a loopback port to a target. Safe for
// concurrent use.
type Proxy struct {
	addr   string
	mu     sync.Mutex
	cond   *sync.Cond
	mode   Mode
	target string
	ln     net.Listener
	conns  map[net.Conn]bool
}

// NewProxy listens on a free loopback port, forwarding nowhere until
// SetTarget.
func NewProxy() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	p.cond = sync.NewCond(&p.mu)
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's host:port; it stays the same across Close and
// Reopen.
func (p *Proxy) Addr() string { return p.addr }

// SetTarget sets where new connections are forwarded.
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// Set switches the mode; leaving Hold lets held connections go on.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	p.mode = m
	p.cond.Broadcast()
	p.mu.Unlock()
	if m == Pass {
		p.reopen()
	}
}

// Close stops listening and closes every connection: a client's
// connections break and its new ones are refused, as if the broker were
// gone. Set(Pass) listens again on the same port.
func (p *Proxy) Close() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
	p.cond.Broadcast()
	p.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
}

// reopen listens again after Close (the port is retried for a few
// seconds, in case a closed connection still holds it).
func (p *Proxy) reopen() {
	p.mu.Lock()
	open := p.ln != nil
	p.mu.Unlock()
	if open {
		return
	}
	var ln net.Listener
	var err error
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return
		}
	}
	panic("kafkatest: the proxy cannot listen on " + p.addr + " again: " + err.Error())
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
}

func (p *Proxy) handle(c net.Conn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	up, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pipe(up, c); done <- struct{}{} }()
	go func() { p.pipe(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// pipe copies from src to dst, waiting while the proxy holds.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait(dst) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection
		}
	}
}

// wait blocks while the mode is Hold; false when the connection was
// closed meanwhile.
func (p *Proxy) wait(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == Hold && p.conns[c] {
		p.cond.Wait()
	}
	return p.conns[c]
}
