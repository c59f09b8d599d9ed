package httpdriver

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/pipebench/pipebench/internal/conn/netclass"
)

// parsed is what the parser made of a connection's bytes: each answer's
// status and whether the connection closes after it, then the error that
// ended it (nil: the bytes ended cleanly between answers).
type parsed struct {
	statuses []int
	closes   []bool
	err      error
}

// parseSplit feeds stream to a parser in pieces of at most size bytes,
// then ends the connection.
func parseSplit(stream string, size int) parsed {
	var r respParser
	var out parsed
	p := []byte(stream)
	for len(p) > 0 {
		piece := p[:min(size, len(p))]
		for len(piece) > 0 {
			n, done, err := r.feed(piece)
			if err != nil {
				out.err = err
				return out
			}
			piece, p = piece[n:], p[n:]
			if done {
				out.statuses, out.closes = append(out.statuses, r.status), append(out.closes, r.closeAfter)
				r.reset()
			}
			if n == 0 && !done {
				break
			}
		}
	}
	if r.started() {
		done, err := r.end(io.EOF)
		if done {
			out.statuses, out.closes = append(out.statuses, r.status), append(out.closes, r.closeAfter)
		}
		out.err = err
	}
	return out
}

// Every answer shape HTTP/1.1 allows is read the same whatever the reads
// cut it into: one byte at a time, a few, or whole.
func TestRespParserAnyCut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stream   string
		statuses []int
		closes   []bool
		err      func(error) bool
	}{
		{name: "content-length, two answers",
			stream:   "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nokHTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
			statuses: []int{200, 503}, closes: []bool{false, false}},
		{name: "chunked with extensions and trailers",
			stream:   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nTrailer: v\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
			statuses: []int{200, 204}, closes: []bool{false, false}},
		{name: "interim answers before the real one",
			stream:   "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc",
			statuses: []int{201}, closes: []bool{false}},
		{name: "connection close",
			stream:   "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 1\r\n\r\nx",
			statuses: []int{200}, closes: []bool{true}},
		{name: "HTTP/1.0 without a length runs until the close",
			stream:   "HTTP/1.0 200 OK\r\n\r\nthe body, until the end",
			statuses: []int{200}, closes: []bool{true}},
		{name: "HTTP/1.0 keep-alive",
			stream:   "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
			statuses: []int{200}, closes: []bool{false}},
		{name: "bare line feeds",
			stream:   "HTTP/1.1 202 Accepted\nContent-Length: 2\n\nok",
			statuses: []int{202}, closes: []bool{false}},
		{name: "a TLS server's complaint",
			stream: "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n",
			err:    func(err error) bool { return errors.Is(err, netclass.ErrPlainToTLS) }},
		{name: "a TLS record",
			stream: "\x15\x03\x01\x00\x02\x02\x46",
			err:    func(err error) bool { return errors.Is(err, netclass.ErrPlainToTLS) }},
		{name: "not HTTP",
			stream: "SSH-2.0-OpenSSH_9.2\r\n",
			err:    func(err error) bool { return errors.Is(err, netclass.ErrProtocolMismatch) }},
		{name: "cut in the body",
			stream:   "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
			statuses: nil,
			err:      func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{name: "malformed chunk size",
			stream: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
			err:    func(err error) bool { return err != nil && strings.Contains(err.Error(), "chunk size") }},
		{name: "malformed length",
			stream: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
			err:    func(err error) bool { return err != nil && strings.Contains(err.Error(), "Content-Length") }},
	} {
		for _, size := range []int{1, 2, 3, 7, 64, 1 << 20} {
			got := parseSplit(tc.stream, size)
			if tc.err == nil && got.err != nil || tc.err != nil && !tc.err(got.err) {
				t.Errorf("%s, pieces of %d: error %v", tc.name, size, got.err)
				continue
			}
			if tc.err != nil {
				continue
			}
			if !slices.Equal(got.statuses, tc.statuses) || !slices.Equal(got.closes, tc.closes) {
				t.Errorf("%s, pieces of %d: statuses %v closes %v, want %v %v", tc.name, size, got.statuses, got.closes, tc.statuses, tc.closes)
			}
		}
		// readResponse over a bufio.Reader reads the same.
		br := bufio.NewReaderSize(strings.NewReader(tc.stream), 16)
		var r respParser
		for i := 0; ; i++ {
			status, closeAfter, err := readResponse(br, &r)
			if err != nil {
				if i < len(tc.statuses) || (err != io.EOF && (tc.err == nil || !tc.err(err))) {
					t.Errorf("%s, readResponse %d: %v", tc.name, i, err)
				}
				break
			}
			if i >= len(tc.statuses) || status != tc.statuses[i] || closeAfter != tc.closes[i] {
				t.Errorf("%s, readResponse %d: %d %v", tc.name, i, status, closeAfter)
				break
			}
		}
	}
}

// A head longer than the limit is an error, not a buffer that grows
// without end.
func TestRespParserHeadLimit(t *testing.T) {
	var r respParser
	p := []byte("HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 1024))
	var err error
	for i := 0; i < maxHead/len(p)+2 && err == nil; i++ {
		_, _, err = r.feed(p)
		p = []byte(strings.Repeat("b", 1024))
	}
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a head of %d bytes and more: %v", maxHead, err)
	}
}
