package grpcdriver

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// transcode turns a message in JSON form straight into protobuf wire form,
// without building a dynamic message: the common cases only (scalars, enums
// by name or number, nested and repeated messages, Timestamp).
// ok is false for anything else (maps, other well-known types, unknown
// fields, malformed JSON), and the caller goes the slow, exact way through
// protojson, which also gives the precise error.
func transcode(dst, src []byte, md protoreflect.MessageDescriptor) (out []byte, ok bool) {
	t := &scanner{b: src}
	t.ws()
	out, ok = t.message(dst, md)
	if !ok {
		return dst, false
	}
	t.ws()
	return out, t.i == len(t.b)
}

type scanner struct {
	b []byte
	i int
}

func (t *scanner) ws() {
	for t.i < len(t.b) {
		switch t.b[t.i] {
		case ' ', '\t', '\n', '\r':
			t.i++
		default:
			return
		}
	}
}

func (t *scanner) peek() byte {
	if t.i < len(t.b) {
		return t.b[t.i]
	}
	return 0
}

func (t *scanner) eat(c byte) bool {
	t.ws()
	if t.peek() == c {
		t.i++
		return true
	}
	return false
}

// str reads a JSON string.
func (t *scanner) str() (string, bool) {
	t.ws()
	if t.peek() != '"' {
		return "", false
	}
	t.i++
	start := t.i
	for t.i < len(t.b) {
		c := t.b[t.i]
		if c == '"' {
			raw := t.b[start:t.i]
			t.i++
			if !utf8.Valid(raw) {
				return "", false
			}
			return string(raw), true
		}
		if c == '\\' {
			return t.strSlow(start)
		}
		if c < 0x20 {
			return "", false
		}
		t.i++
	}
	return "", false
}

// strSlow reads the rest of a string holding escapes.
func (t *scanner) strSlow(start int) (string, bool) {
	buf := append([]byte(nil), t.b[start:t.i]...)
	for t.i < len(t.b) {
		c := t.b[t.i]
		switch {
		case c == '"':
			t.i++
			if !utf8.Valid(buf) {
				return "", false
			}
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			t.i++
			continue
		}
		if t.i+1 >= len(t.b) {
			return "", false
		}
		e := t.b[t.i+1]
		t.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if t.i+4 > len(t.b) {
				return "", false
			}
			v, err := strconv.ParseUint(string(t.b[t.i:t.i+4]), 16, 16)
			if err != nil || (v >= 0xd800 && v < 0xe000) {
				return "", false // surrogate pairs: leave to protojson
			}
			t.i += 4
			buf = utf8.AppendRune(buf, rune(v))
		default:
			return "", false
		}
	}
	return "", false
}

// scalar reads a number or a literal (true, false, null) as its text.
func (t *scanner) scalar() (string, bool) {
	t.ws()
	start := t.i
	for t.i < len(t.b) {
		c := t.b[t.i]
		if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			break
		}
		t.i++
	}
	return string(t.b[start:t.i]), t.i > start
}

func (t *scanner) message(dst []byte, md protoreflect.MessageDescriptor) ([]byte, bool) {
	if !t.eat('{') {
		return dst, false
	}
	fields := md.Fields()
	if t.eat('}') {
		return dst, true
	}
	for {
		name, ok := t.str()
		if !ok || !t.eat(':') {
			return dst, false
		}
		fd := fields.ByJSONName(name)
		if fd == nil {
			fd = fields.ByTextName(name)
		}
		if fd == nil || fd.IsMap() || fd.IsWeak() {
			return dst, false
		}
		t.ws()
		if t.peek() == 'n' { // null: the field stays unset
			if lit, _ := t.scalar(); lit != "null" {
				return dst, false
			}
		} else if fd.IsList() {
			if !t.eat('[') {
				return dst, false
			}
			if !t.eat(']') {
				for {
					if dst, ok = t.value(dst, fd); !ok {
						return dst, false
					}
					if t.eat(']') {
						break
					}
					if !t.eat(',') {
						return dst, false
					}
				}
			}
		} else if dst, ok = t.value(dst, fd); !ok {
			return dst, false
		}
		if t.eat('}') {
			return dst, true
		}
		if !t.eat(',') {
			return dst, false
		}
	}
}

// value appends one value of field fd, tag included.
func (t *scanner) value(dst []byte, fd protoreflect.FieldDescriptor) ([]byte, bool) {
	num := fd.Number()
	t.ws()
	switch fd.Kind() {
	case protoreflect.MessageKind:
		sub := fd.Message()
		var body []byte
		var ok bool
		switch sub.FullName() {
		case "google.protobuf.Timestamp":
			body, ok = t.timestamp()
		default:
			if sub.FullName().Parent() == "google.protobuf" {
				return dst, false // wrappers, Struct, Any...: protojson's forms
			}
			body, ok = t.message(nil, sub)
		}
		if !ok {
			return dst, false
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		return protowire.AppendBytes(dst, body), true
	case protoreflect.GroupKind:
		return dst, false
	case protoreflect.StringKind:
		s, ok := t.str()
		if !ok {
			return dst, false
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		return protowire.AppendString(dst, s), true
	case protoreflect.BytesKind:
		s, ok := t.str()
		if !ok {
			return dst, false
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			if b, err = base64.URLEncoding.DecodeString(s); err != nil {
				return dst, false
			}
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		return protowire.AppendBytes(dst, b), true
	case protoreflect.BoolKind:
		lit, _ := t.scalar()
		var v uint64
		switch lit {
		case "true":
			v = 1
		case "false":
		default:
			return dst, false
		}
		dst = protowire.AppendTag(dst, num, protowire.VarintType)
		return protowire.AppendVarint(dst, v), true
	case protoreflect.EnumKind:
		var n int64
		if t.peek() == '"' {
			s, _ := t.str()
			ev := fd.Enum().Values().ByName(protoreflect.Name(s))
			if ev == nil {
				return dst, false
			}
			n = int64(ev.Number())
		} else {
			lit, _ := t.scalar()
			v, err := strconv.ParseInt(lit, 10, 32)
			if err != nil {
				return dst, false
			}
			n = v
		}
		dst = protowire.AppendTag(dst, num, protowire.VarintType)
		return protowire.AppendVarint(dst, uint64(n)), true
	}
	// Numbers: a JSON number, or a string holding one.
	var lit string
	var ok bool
	if t.peek() == '"' {
		lit, ok = t.str()
	} else {
		lit, ok = t.scalar()
	}
	if !ok || lit == "" || (lit[0] != '-' && (lit[0] < '0' || lit[0] > '9')) {
		return dst, false
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		bits := 64
		if k := fd.Kind(); k == protoreflect.Int32Kind || k == protoreflect.Sint32Kind || k == protoreflect.Sfixed32Kind {
			bits = 32
		}
		v, err := strconv.ParseInt(lit, 10, bits)
		if err != nil {
			return dst, false
		}
		switch fd.Kind() {
		case protoreflect.Int32Kind, protoreflect.Int64Kind:
			dst = protowire.AppendTag(dst, num, protowire.VarintType)
			return protowire.AppendVarint(dst, uint64(v)), true
		case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
			dst = protowire.AppendTag(dst, num, protowire.VarintType)
			return protowire.AppendVarint(dst, protowire.EncodeZigZag(v)), true
		case protoreflect.Sfixed32Kind:
			dst = protowire.AppendTag(dst, num, protowire.Fixed32Type)
			return protowire.AppendFixed32(dst, uint32(int32(v))), true
		default:
			dst = protowire.AppendTag(dst, num, protowire.Fixed64Type)
			return protowire.AppendFixed64(dst, uint64(v)), true
		}
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		bits := 64
		if k := fd.Kind(); k == protoreflect.Uint32Kind || k == protoreflect.Fixed32Kind {
			bits = 32
		}
		v, err := strconv.ParseUint(lit, 10, bits)
		if err != nil {
			return dst, false
		}
		switch fd.Kind() {
		case protoreflect.Fixed32Kind:
			dst = protowire.AppendTag(dst, num, protowire.Fixed32Type)
			return protowire.AppendFixed32(dst, uint32(v)), true
		case protoreflect.Fixed64Kind:
			dst = protowire.AppendTag(dst, num, protowire.Fixed64Type)
			return protowire.AppendFixed64(dst, v), true
		default:
			dst = protowire.AppendTag(dst, num, protowire.VarintType)
			return protowire.AppendVarint(dst, v), true
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		v, err := strconv.ParseFloat(lit, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return dst, false // "NaN", "Infinity" and overflow: protojson's rules
		}
		if fd.Kind() == protoreflect.FloatKind {
			if math.Abs(v) > math.MaxFloat32 {
				return dst, false
			}
			dst = protowire.AppendTag(dst, num, protowire.Fixed32Type)
			return protowire.AppendFixed32(dst, math.Float32bits(float32(v))), true
		}
		dst = protowire.AppendTag(dst, num, protowire.Fixed64Type)
		return protowire.AppendFixed64(dst, math.Float64bits(v)), true
	}
	return dst, false
}

// timestamp reads an RFC 3339 string as a google.protobuf.Timestamp body.
func (t *scanner) timestamp() ([]byte, bool) {
	s, ok := t.str()
	if !ok {
		return nil, false
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || ts.Year() < 1 || ts.Year() > 9999 {
		return nil, false
	}
	return secondsNanos(nil, ts.Unix(), int32(ts.Nanosecond())), true
}

func secondsNanos(b []byte, sec int64, nanos int32) []byte {
	if sec != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(sec))
	}
	if nanos != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(nanos)))
	}
	return b
}
