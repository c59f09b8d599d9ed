package httpdriver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// respParser reads HTTP/1.1 responses, one after the other, from the bytes
// of a connection fed to it as they arrive, in pieces of any size: the
// event loop (loop_linux.go) feeds it what one read returned, readResponse
// what a bufio.Reader holds. It keeps only what it must between pieces (a
// head or a chunk-size line cut by a read), so a connection costs no read
// buffer of its own while its answers arrive whole, and it allocates
// nothing when they do. A response's body is skipped, never kept.
type respParser struct {
	state      uint8
	head       []byte // a head cut by a read: what came so far
	line       []byte // chunked: a size or trailer line cut by a read
	left       int64  // body bytes (or a chunk's bytes and its CRLF) still to skip
	status     int
	closeAfter bool
	tlsCheck   bool   // a 400, or a body running until close: keep its start in peek
	peek       []byte // the start of such a body: a TLS server's complaint?
}

// The parser's states.
const (
	psHead       uint8 = iota // the status line and headers
	psBody                    // a body of known length
	psChunkSize               // a chunk-size line
	psChunkData               // a chunk and its CRLF
	psTrailer                 // the trailers after the last chunk
	psUntilClose              // a body that runs until the server closes
)

// Limits on what a response may make the parser keep.
const (
	maxHead = 64 << 10 // a status line and headers
	maxLine = 4 << 10  // a chunk-size or trailer line
	maxPeek = 512      // the start of a 400's body
)

// errUnasked is a server that sent bytes while no request was waiting.
var errUnasked = fmt.Errorf("%w: the server sent bytes while no request was waiting for an answer", netclass.ErrProtocolMismatch)

// errPlainToTLS is a TLS server's answer to a plain-text request.
var errPlainToTLS = netclass.ErrPlainToTLS

// reset readies the parser for the next response.
func (r *respParser) reset() {
	r.state, r.left, r.status, r.closeAfter, r.tlsCheck = psHead, 0, 0, false, false
	r.head, r.line, r.peek = r.head[:0], r.line[:0], r.peek[:0]
}

// started reports whether any byte of the current response came.
func (r *respParser) started() bool { return r.state != psHead || len(r.head) > 0 }

// feed takes the next bytes of the connection. It returns how many it
// used, and done once the response is complete (status and closeAfter
// are then set; the bytes after it are not used). An error is a response
// that is not HTTP/1.1 or breaks its limits.
func (r *respParser) feed(p []byte) (used int, done bool, err error) {
	for used < len(p) {
		rest := p[used:]
		switch r.state {
		case psHead:
			n, complete, err := r.feedHead(rest)
			used += n
			if err != nil || !complete {
				return used, false, err
			}
			if r.status >= 100 && r.status < 200 {
				r.reset() // an interim answer: the real one follows
				continue
			}
			if r.state == psBody && r.left == 0 {
				return used, true, nil
			}
		case psBody:
			k := min(r.left, int64(len(rest)))
			r.keep(rest[:k])
			used += int(k)
			if r.left -= k; r.left == 0 {
				return used, true, r.checkTLS()
			}
		case psChunkData:
			k := min(r.left, int64(len(rest)))
			used += int(k)
			if r.left -= k; r.left == 0 {
				r.state = psChunkSize
			}
		case psChunkSize, psTrailer:
			line, n, ok, err := r.nextLine(rest)
			used += n
			if err != nil || !ok {
				return used, false, err
			}
			if r.state == psTrailer {
				if len(line) == 0 {
					return used, true, nil
				}
				continue
			}
			if i := bytes.IndexByte(line, ';'); i >= 0 {
				line = line[:i]
			}
			size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
			if err != nil || size < 0 {
				return used, false, errors.New("malformed chunk size " + strconv.Quote(string(line)))
			}
			if size == 0 {
				r.state = psTrailer
			} else {
				r.state, r.left = psChunkData, size+2
			}
		case psUntilClose:
			r.keep(rest)
			return len(p), false, nil
		}
	}
	return used, false, nil
}

// feedHead takes bytes of the head; complete once the blank line after the
// headers came and the head was parsed.
func (r *respParser) feedHead(p []byte) (used int, complete bool, err error) {
	old := len(r.head)
	end := headEnd(r.head, p)
	if end < 0 {
		if old+len(p) > maxHead {
			return 0, false, fmt.Errorf("response head longer than %d bytes", maxHead)
		}
		r.head = append(r.head, p...)
		return len(p), false, r.checkStatusLine(r.head)
	}
	head := p[:end]
	if old > 0 {
		r.head = append(r.head, head...)
		head = r.head
	}
	return end, true, r.parseHead(head)
}

// headEnd returns where the head ends in p (after its blank line) when it
// began with prior, or -1.
func headEnd(prior, p []byte) int {
	if len(prior) == 0 {
		// The whole head in one piece, as answers mostly come: the
		// first "\n\r\n" or "\n\n", found by the library's vector search.
		// (Pipelined, p holds many answers: "\n\n" is looked for only
		// before the first "\n\r\n", not in the whole of p.)
		i := bytes.Index(p, []byte("\n\r\n"))
		within := p
		if i >= 0 {
			within = p[:i+1]
		}
		if j := bytes.Index(within, []byte("\n\n")); j >= 0 {
			return j + 2
		}
		if i >= 0 {
			return i + 3
		}
		return -1
	}
	// A blank line is "\n\r\n" or "\n\n"; it may straddle prior and p.
	for i := 0; i < len(p); i++ {
		if p[i] != '\n' {
			continue
		}
		// p[i] ends a line: is the line before it empty?
		var b1, b2 byte // the two bytes before p[i]
		switch {
		case i >= 2:
			b1, b2 = p[i-1], p[i-2]
		case i == 1:
			b1 = p[0]
			if n := len(prior); n > 0 {
				b2 = prior[n-1]
			}
		default:
			if n := len(prior); n > 0 {
				b1 = prior[n-1]
			}
			if n := len(prior); n > 1 {
				b2 = prior[n-2]
			}
		}
		if b1 == '\n' || b1 == '\r' && b2 == '\n' {
			return i + 1
		}
	}
	return -1
}

// checkStatusLine refuses a head that cannot be HTTP/1.x as soon as its
// first line (or its first bytes, for a TLS record) came, rather than
// waiting for a blank line that may never come.
func (r *respParser) checkStatusLine(head []byte) error {
	if netclass.LooksLikeTLS(head) {
		return errPlainToTLS
	}
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		_, err := parseStatusLine(bytes.TrimRight(head[:i], "\r\n"))
		return err
	}
	return nil
}

// parseStatusLine returns the status of an HTTP/1.x status line.
func parseStatusLine(line []byte) (int, error) {
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, malformed(line)
	}
	d0, d1, d2 := line[9]-'0', line[10]-'0', line[11]-'0'
	if d0 > 9 || d1 > 9 || d2 > 9 {
		return 0, malformed(line)
	}
	return int(d0)*100 + int(d1)*10 + int(d2), nil
}

// parseHead reads the status line and headers and sets how the body ends.
func (r *respParser) parseHead(head []byte) error {
	i := bytes.IndexByte(head, '\n')
	line := bytes.TrimRight(head[:i], "\r")
	status, err := parseStatusLine(line)
	if err != nil {
		return err
	}
	r.status, r.closeAfter = status, line[7] == '0' // HTTP/1.0
	length, chunked := int64(-1), false
	for rest := head[i+1:]; len(rest) > 0; {
		j := bytes.IndexByte(rest, '\n')
		h := bytes.TrimRight(rest[:j], "\r")
		rest = rest[j+1:]
		k := bytes.IndexByte(h, ':')
		if k < 0 {
			continue
		}
		name, value := h[:k], bytes.TrimSpace(h[k+1:])
		switch len(name) {
		case len("Content-Length"):
			if bytes.EqualFold(name, []byte("Content-Length")) {
				if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
					return errors.New("malformed Content-Length " + strconv.Quote(string(value)))
				}
			}
		case len("Transfer-Encoding"):
			if bytes.EqualFold(name, []byte("Transfer-Encoding")) {
				chunked = containsFold(value, "chunked")
			}
		case len("Connection"):
			if bytes.EqualFold(name, []byte("Connection")) {
				switch {
				case bytes.EqualFold(value, []byte("keep-alive")):
					r.closeAfter = false
				case containsFold(value, "close"):
					r.closeAfter = true
				case containsFold(value, "keep-alive"):
					r.closeAfter = false
				}
			}
		}
	}
	switch {
	case status < 200 || status == 204 || status == 304:
		r.state, r.left = psBody, 0
	case chunked:
		r.state = psChunkSize
	case length >= 0:
		r.state, r.left, r.tlsCheck = psBody, length, status == 400
	default: // the body runs until the server closes
		r.state, r.closeAfter, r.tlsCheck = psUntilClose, true, true
	}
	return nil
}

// containsFold reports whether v contains s (lower case) in any case.
func containsFold(v []byte, s string) bool {
	for i := 0; i+len(s) <= len(v); i++ {
		if bytes.EqualFold(v[i:i+len(s)], []byte(s)) {
			return true
		}
	}
	return false
}

// nextLine returns the next line of p without its line end, joined to
// what an earlier piece left of it; ok is false when p ended first.
func (r *respParser) nextLine(p []byte) (line []byte, used int, ok bool, err error) {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		if len(r.line)+len(p) > maxLine {
			return nil, 0, false, fmt.Errorf("chunked body line longer than %d bytes", maxLine)
		}
		r.line = append(r.line, p...)
		return nil, len(p), false, nil
	}
	line = p[:i]
	if len(r.line) > 0 {
		r.line = append(r.line, line...)
		line = r.line
	}
	line = bytes.TrimRight(line, "\r")
	r.line = r.line[:0]
	return line, i + 1, true, nil
}

// keep keeps the start of a body that may be a TLS server's complaint.
func (r *respParser) keep(b []byte) {
	if r.tlsCheck && len(r.peek) < maxPeek {
		r.peek = append(r.peek, b[:min(len(b), maxPeek-len(r.peek))]...)
	}
}

// checkTLS fails a complete answer that is a TLS server's complaint.
func (r *respParser) checkTLS() error {
	if r.tlsCheck && netclass.PlainToTLS(r.status, r.peek) {
		return errPlainToTLS
	}
	return nil
}

// end is the connection ending (or failing with err) in the middle of a
// response: done when the response's body runs until the server closes;
// otherwise the error to report.
func (r *respParser) end(err error) (done bool, _ error) {
	switch {
	case r.checkTLS() != nil: // a TLS server's complaint, cut short or not
		return false, errPlainToTLS
	case r.state == psUntilClose && err == io.EOF:
		return true, nil
	case netclass.LooksLikeTLS(r.head):
		return false, errPlainToTLS
	case err == io.EOF && r.started():
		return false, io.ErrUnexpectedEOF
	}
	return false, err
}

// readResponse reads one HTTP/1.1 response from br and discards its body.
// It returns the status and whether the server will close the connection.
func readResponse(br *bufio.Reader, r *respParser) (status int, closeAfter bool, err error) {
	r.reset()
	for {
		if _, err := br.Peek(1); err != nil {
			done, err := r.end(err)
			if done {
				return r.status, true, nil
			}
			return 0, false, err
		}
		p, _ := br.Peek(br.Buffered())
		n, done, err := r.feed(p)
		br.Discard(n)
		if err != nil {
			return 0, false, err
		}
		if done {
			return r.status, r.closeAfter, nil
		}
	}
}

// malformed is the error of a status line that is not HTTP/1.x.
func malformed(line []byte) error {
	if netclass.LooksLikeTLS(line) {
		return errPlainToTLS
	}
	if len(line) > 80 {
		line = line[:80]
	}
	return fmt.Errorf("%w: malformed status line %s: the server does not speak HTTP/1.1", netclass.ErrProtocolMismatch, strconv.Quote(string(line)))
}
