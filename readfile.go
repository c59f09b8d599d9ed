package pipebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Input size limits: what pipebench reads of a file it is given, checked
// while reading, so that a wrong file (/dev/zero, a disk image) is an error
// and not an exhausted memory.
const (
	MaxScenarioSize = 4 << 20   // a scenario or suite file
	MaxProtoSize    = 4 << 20   // a .proto file
	MaxResultSize   = 512 << 20 // a Result (a long soak's series) or shard
	// MaxConfigSize bounds the other files a scenario key or a flag
	// names: a collector's config_file, a pod patch, an affinity, TLS
	// certificates and keys, NATS credentials.
	MaxConfigSize = 4 << 20
)

// Input is a file a user names (a command's argument, a flag's value, a
// scenario key's) and how pipebench reads it: every such file is read
// through ReadInput or OpenInput, and nowhere else, so that each one is
// bounded in size (checked while reading), never waits for ever (a FIFO
// nobody writes, a terminal) once the context is done, and is a regular
// file where one is needed.
type Input struct {
	// Path is the file; "-" is the standard input.
	Path string
	// What names the file in errors, as the user gave it: "scenario",
	// "--pod-patch", "sut.config_file".
	What string
	// Limit is the most bytes read; a longer file is a usage error that
	// says so. 0: MaxConfigSize.
	Limit int64
	// Regular refuses anything but a regular file (a FIFO, a device, a
	// socket, the standard input from a pipe or a terminal): for a file
	// read again later or by another process, or read while a run goes
	// on, where a wait for a writer would hold the run.
	Regular bool
}

func (in Input) limit() int64 {
	if in.Limit <= 0 {
		return MaxConfigSize
	}
	return in.Limit
}

// name is the file as errors name it: "scenario x.yaml", "the standard
// input".
func (in Input) name() string {
	p := in.Path
	if p == "-" {
		p = "the standard input"
	}
	if in.What == "" {
		return p
	}
	return in.What + " " + p
}

// ReadInput reads the whole of in, within its limit, until ctx is done:
// then it returns at once with an error (ExitFailure) saying what it was
// reading, even when the file is a FIFO no one writes or a terminal.
func ReadInput(ctx context.Context, in Input) ([]byte, error) {
	r, err := OpenInput(ctx, in)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// OpenInput opens in for reading as ReadInput reads it: its Read fails
// with a usage error once more than the limit was read, and with an
// interruption once ctx is done (at once, whatever the file is).
func OpenInput(ctx context.Context, in Input) (io.ReadCloser, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	f, regular, err := openInput(ctx, in)
	if err != nil {
		return nil, err
	}
	return &inputReader{ctx: ctx, in: in, f: f, regular: regular, left: in.limit() + 1, stdin: in.Path == "-"}, nil
}

// openInput opens the file of in and says whether it is a regular file.
// The first open never waits: O_NONBLOCK, so that a FIFO is only found out
// (its open would wait for a writer); a FIFO is then opened again, waiting
// in the background for a writer until ctx is done.
func openInput(ctx context.Context, in Input) (*os.File, bool, error) {
	if in.Path == "-" {
		fi, err := os.Stdin.Stat()
		if err != nil {
			return nil, false, UsageError("cannot read "+in.name(), "", err)
		}
		if err := in.check(fi); err != nil {
			return nil, false, err
		}
		return os.Stdin, fi.Mode().IsRegular(), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, in.interrupted(err)
	}
	f, err := os.OpenFile(in.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, in.openError(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, UsageError("cannot read "+in.name(), "", err)
	}
	if err := in.check(fi); err != nil {
		f.Close()
		return nil, false, err
	}
	if fi.Mode().IsRegular() || fi.Mode()&fs.ModeNamedPipe == 0 {
		return f, fi.Mode().IsRegular(), nil
	}
	// A FIFO opened without waiting reads as empty until a writer comes:
	// open it again, waiting for the writer (as a reader of a FIFO
	// does), in the background.
	f.Close()
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(in.Path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, false, in.openError(o.err)
		}
		return o.f, false, nil
	case <-ctx.Done():
		// The open waits for a writer: be that writer for a moment, so
		// that it returns (and closes) rather than waits for ever.
		if w, err := os.OpenFile(in.Path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, false, in.interrupted(context.Cause(ctx))
	}
}

// check refuses a folder always, and anything but a regular file when in
// asks for one.
func (in Input) check(fi fs.FileInfo) error {
	m := fi.Mode()
	if m.IsDir() {
		return UsageError(fmt.Sprintf("%s is a folder", in.name()), "give the path of a file", nil)
	}
	if in.Regular && !m.IsRegular() {
		return UsageError(fmt.Sprintf("%s is not a regular file but %s", in.name(), fileKind(m)),
			"give a regular file: pipebench reads this file again while it runs (or another process reads it), which a pipe or a device cannot be read for", nil)
	}
	return nil
}

// fileKind says what kind of file a mode is, as a person says it.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeCharDevice != 0:
		return "a character device (like a terminal or /dev/zero)"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeIrregular != 0:
		return "not a regular file"
	}
	return "a " + m.Type().String() + " file"
}

func (in Input) openError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &notExist{UsageError(fmt.Sprintf("%s does not exist", in.name()), "check the path", nil)}
	}
	return UsageError("cannot read "+in.name(), "", err)
}

// notExist is a file that does not exist: errors.Is(err, fs.ErrNotExist)
// holds, though the message does not repeat the system's.
type notExist struct{ err *Error }

func (e *notExist) Error() string        { return e.err.Error() }
func (e *notExist) Is(target error) bool { return target == fs.ErrNotExist }
func (e *notExist) Unwrap() error        { return e.err }

// interrupted is the error of a read the context ended: a signal.
func (in Input) interrupted(cause error) error {
	return &Error{Code: ExitFailure, Msg: "stopped while reading " + in.name(), Err: cause}
}

func (in Input) tooLarge() error {
	return &Error{Code: ExitUsage, Msg: fmt.Sprintf("%s is larger than %s, the most pipebench reads of such a file", in.name(), FormatBytes(in.limit())),
		Hint: "check that it is the file you meant"}
}

// inputReader is an opened Input.
type inputReader struct {
	ctx     context.Context
	in      Input
	f       *os.File
	regular bool
	stdin   bool
	left    int64 // bytes still allowed, one more than the limit at first
	// buf and pending are a read still waiting, from a file whose reads
	// may wait for ever (a pipe, a FIFO, a terminal): done in the
	// background, so that ctx ends the wait.
	pending chan readResult
	buf     []byte
	err     error
}

type readResult struct {
	n   int
	err error
}

func (r *inputReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if err := r.ctx.Err(); err != nil {
		r.err = r.in.interrupted(context.Cause(r.ctx))
		return 0, r.err
	}
	if r.left <= 0 {
		r.err = r.in.tooLarge()
		return 0, r.err
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	var n int
	var err error
	if r.regular {
		n, err = r.f.Read(p)
	} else {
		n, err = r.waitRead(p)
	}
	r.left -= int64(n)
	if r.left <= 0 {
		r.err = r.in.tooLarge()
		return 0, r.err
	}
	if err != nil && err != io.EOF {
		if r.ctx.Err() != nil {
			err = r.in.interrupted(context.Cause(r.ctx))
		} else {
			err = UsageError("cannot read "+r.in.name(), "", err)
		}
		r.err = err
	}
	return n, err
}

// waitRead reads from a file whose read may wait for ever, in the
// background, returning when it is done or when ctx is.
func (r *inputReader) waitRead(p []byte) (int, error) {
	if r.pending == nil {
		if cap(r.buf) < len(p) {
			r.buf = make([]byte, len(p))
		}
		buf := r.buf[:len(p)]
		ch := make(chan readResult, 1)
		r.pending = ch
		go func() {
			n, err := r.f.Read(buf)
			ch <- readResult{n, err}
		}()
	}
	select {
	case res := <-r.pending:
		r.pending = nil
		n := copy(p, r.buf[:res.n])
		return n, res.err
	case <-r.ctx.Done():
		// A pipe's or a FIFO's read ends with its deadline; a terminal's
		// may not, and is left to the process's end.
		r.f.SetReadDeadline(time.Unix(1, 0))
		return 0, r.in.interrupted(context.Cause(r.ctx))
	}
}

func (r *inputReader) Close() error {
	if r.stdin {
		return nil
	}
	if r.pending != nil {
		// A read still waits in the background: it returns with its
		// deadline passed, or with the file closed.
		r.f.SetReadDeadline(time.Unix(1, 0))
	}
	return r.f.Close()
}

// ReadFile reads the file at path ("-": standard input), refusing it once
// more than limit bytes were read, with an error that names the file, the
// limit and what to do. It does not stop for a signal: commands read
// what the user names with ReadInput.
func ReadFile(path string, limit int64) ([]byte, error) {
	return ReadInput(context.Background(), Input{Path: path, Limit: limit})
}

// ReadAllLimit reads r to its end, refusing more than limit bytes; name
// says what r is in the error.
func ReadAllLimit(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, Input{Path: name, Limit: limit}.tooLarge()
	}
	return data, nil
}

// ReadResult reads a Result written by pipebench (`run --out`, a shard, a
// checkpoint), refusing a file that is too large, is no Result, or comes
// from a newer pipebench, with an error saying which and what to do.
func ReadResult(path string) (*Result, error) {
	return ReadResultContext(context.Background(), path)
}

// ReadResultContext is ReadResult, stopped when ctx is done (a signal),
// even while it waits for a FIFO's writer or decodes a large file.
func ReadResultContext(ctx context.Context, path string) (*Result, error) {
	in := Input{Path: path, Limit: MaxResultSize}
	r, err := OpenInput(ctx, in)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) && pe.Code != ExitUsage {
			return nil, err
		}
		return nil, UsageError("cannot read the result", "give the path of a file written by `pipebench run --out`", err)
	}
	defer r.Close()
	// Decoded as it is read, through the limit: a file that is no JSON
	// fails at its first byte, one too large at the limit.
	res, err := DecodeResult(r, ResultCheck{})
	if err != nil {
		if ir, ok := r.(*inputReader); ok && ir.left <= 0 {
			return nil, &Error{Code: ExitUsage, Msg: fmt.Sprintf("%s is larger than %s, the most pipebench reads of a Result", path, FormatBytes(MaxResultSize)),
				Hint: "check that it is the file you meant"}
		}
		if pe := (*Error)(nil); errors.As(err, &pe) {
			return nil, err
		}
		return nil, UsageError(fmt.Sprintf("%s is not a pipebench result", path), "give the path of a file written by `pipebench run --out`", err)
	}
	if res.Schema == 0 || res.Schema > ResultSchema {
		return nil, UsageError(fmt.Sprintf("%s has result schema %d; this pipebench reads up to %d", path, res.Schema, ResultSchema), "", nil)
	}
	return res, nil
}

// CheckFile reads the file at path as ReadInput does with Regular set,
// and forgets it: for a file a library or another process reads later (a
// kubeconfig), so that it is known to be a regular file within limit
// (0: MaxConfigSize) before it is. what names it in errors.
func CheckFile(what, path string, limit int64) error {
	_, err := ReadInput(context.Background(), Input{Path: path, What: what, Limit: limit, Regular: true})
	return err
}

// ResultCheck is what DecodeResult calls as it decodes: the plan once
// decoded, each phase row and each series as it is decoded, the errors.
// An error stops the decoding. Any of them may be nil.
type ResultCheck struct {
	Manifest func(*Manifest) error
	Plan     func(*Plan) error
	// Points, if set, is the most points a series may hold (0: any),
	// asked as each series begins: a series past it is refused as its
	// points are read, before they are all held.
	Points func() int
	Phase  func(i int, p *PhaseResult) error
	Series func(i int, s *Series) error
	Errors func(map[string][]string) error
}

// DecodeResult decodes a Result from r as it reads it: its fields one by
// one, and its phase rows and series one element at a time, so that what
// it holds is the Result being built and one element, not the whole text
// besides (a json.Decoder reads a whole value before decoding it). check
// sees each part as it is decoded (see ResultCheck).
func DecodeResult(r io.Reader, check ResultCheck) (*Result, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	res := &Result{}
	fields := map[string]any{
		"schema": &res.Schema, "drain": &res.Drain, "total": &res.Total,
		"summary": &res.Summary, "thresholds": &res.Thresholds, "detections": &res.Detections,
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		switch key {
		case "manifest":
			if err := dec.Decode(&res.Manifest); err != nil {
				return nil, fmt.Errorf("manifest: %w", err)
			}
			if check.Manifest != nil {
				err = check.Manifest(&res.Manifest)
			}
		case "plan":
			if err := dec.Decode(&res.Plan); err != nil {
				return nil, fmt.Errorf("plan: %w", err)
			}
			if check.Plan != nil {
				err = check.Plan(&res.Plan)
			}
		case "phases":
			res.Phases = nil
			err = decodeList(dec, "phases", func(i int) error {
				var p PhaseResult
				if err := dec.Decode(&p); err != nil {
					return fmt.Errorf("phases[%d]: %w", i, err)
				}
				res.Phases = append(res.Phases, p)
				if check.Phase != nil {
					return check.Phase(i, &res.Phases[i])
				}
				return nil
			})
		case "series":
			res.Series = nil
			err = decodeList(dec, "series", func(i int) error {
				limit := 0
				if check.Points != nil {
					limit = check.Points()
				}
				var s Series
				if err := decodeSeries(dec, &s, limit); err != nil {
					return fmt.Errorf("series[%d]%s: %w", i, nameOf(s), err)
				}
				res.Series = append(res.Series, s)
				if check.Series != nil {
					return check.Series(i, &res.Series[i])
				}
				return nil
			})
		case "errors":
			if err := dec.Decode(&res.Errors); err != nil {
				return nil, fmt.Errorf("errors: %w", err)
			}
			if check.Errors != nil {
				err = check.Errors(res.Errors)
			}
		default:
			f, ok := fields[key]
			if !ok {
				var skip json.RawMessage // a field of a newer pipebench
				f = &skip
			}
			if err := dec.Decode(f); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	return res, nil
}

// decodeSeries decodes one series from dec, its points one at a time,
// refusing more than limit of them (0: any).
func decodeSeries(dec *json.Decoder, s *Series, limit int) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch key, _ := tok.(string); key {
		case "points":
			err = decodeList(dec, "points", func(i int) error {
				if limit > 0 && i >= limit {
					return fmt.Errorf("more than the %d points a series of this Result can hold", limit)
				}
				var tv TimeValue
				if err := dec.Decode(&tv); err != nil {
					return err
				}
				s.Points = append(s.Points, tv)
				return nil
			})
		case "name":
			err = dec.Decode(&s.Name)
		case "labels":
			err = dec.Decode(&s.Labels)
		case "unit":
			err = dec.Decode(&s.Unit)
		case "kind":
			err = dec.Decode(&s.Kind)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return err
		}
	}
	return expectDelim(dec, '}')
}

// nameOf names a series in an error, once its name is known.
func nameOf(s Series) string {
	if s.Name == "" {
		return ""
	}
	return " (" + s.Name + ")"
}

// decodeList reads a JSON list (or null) from dec, calling each for its
// elements, which decodes its element from dec; each's error is returned
// as it is.
func decodeList(dec *json.Decoder, what string, each func(i int) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: want a list, not %v", what, tok)
	}
	for i := 0; dec.More(); i++ {
		if err := each(i); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, not %v", want, tok)
	}
	return nil
}
