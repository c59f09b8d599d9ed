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
// appended to dst, without building a dynamic message: the common cases
// only (scalars, enums by name or number, nested and repeated messages,
// Timestamp). ok is false for anything else (maps, other well-known types,
// unknown fields, malformed JSON), and the caller goes the slow, exact way
// through protojson, which also gives the precise error; dst is then
// returned as it was.
func transcode(dst, src []byte, md protoreflect.MessageDescriptor) (out []byte, ok bool) {
	return transcodeWith(dst, src, md, nil)
}

// transcodeWith is transcode looking field and enum value names up in ix
// (nil: in the descriptors), which allocates nothing.
func transcodeWith(dst, src []byte, md protoreflect.MessageDescriptor, ix *names) (out []byte, ok bool) {
	t := scanner{b: src, ix: ix}
	t.ws()
	out, ok = t.message(dst, md)
	if !ok {
		return dst, false
	}
	t.ws()
	if t.i != len(t.b) {
		return dst, false
	}
	return out, true
}

// names are the JSON and text names of the fields of a message type and
// of the types it holds, and the names of their enums' values: looked up
// by a []byte key without making a string of it.
type names struct {
	fields map[protoreflect.MessageDescriptor]map[string]protoreflect.FieldDescriptor
	enums  map[protoreflect.EnumDescriptor]map[string]int32
}

// newNames indexes md and every message and enum type its fields reach.
func newNames(md protoreflect.MessageDescriptor) *names {
	ix := &names{fields: map[protoreflect.MessageDescriptor]map[string]protoreflect.FieldDescriptor{},
		enums: map[protoreflect.EnumDescriptor]map[string]int32{}}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if _, ok := ix.fields[md]; ok {
			return
		}
		m := map[string]protoreflect.FieldDescriptor{}
		ix.fields[md] = m
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			fd := fs.Get(i)
			m[fd.TextName()] = fd
			m[fd.JSONName()] = fd // the JSON name wins, as in ByJSONName first
			if sub := fd.Message(); sub != nil {
				walk(sub)
			}
			if en := fd.Enum(); en != nil {
				if _, ok := ix.enums[en]; !ok {
					vals := map[string]int32{}
					vs := en.Values()
					for j := 0; j < vs.Len(); j++ {
						vals[string(vs.Get(j).Name())] = int32(vs.Get(j).Number())
					}
					ix.enums[en] = vals
				}
			}
		}
	}
	walk(md)
	return ix
}

type scanner struct {
	b  []byte
	i  int
	ix *names
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

// str reads a JSON string: the source's own bytes when it holds no
// escapes, a new slice otherwise.
func (t *scanner) str() ([]byte, bool) {
	t.ws()
	if t.peek() != '"' {
		return nil, false
	}
	t.i++
	start := t.i
	for t.i < len(t.b) {
		c := t.b[t.i]
		if c == '"' {
			raw := t.b[start:t.i]
			t.i++
			if !utf8.Valid(raw) {
				return nil, false
			}
			return raw, true
		}
		if c == '\\' {
			return t.strSlow(start)
		}
		if c < 0x20 {
			return nil, false
		}
		t.i++
	}
	return nil, false
}

// strSlow reads the rest of a string holding escapes.
func (t *scanner) strSlow(start int) ([]byte, bool) {
	buf := append([]byte(nil), t.b[start:t.i]...)
	for t.i < len(t.b) {
		c := t.b[t.i]
		switch {
		case c == '"':
			t.i++
			if !utf8.Valid(buf) {
				return nil, false
			}
			return buf, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			buf = append(buf, c)
			t.i++
			continue
		}
		if t.i+1 >= len(t.b) {
			return nil, false
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
				return nil, false
			}
			v, err := strconv.ParseUint(string(t.b[t.i:t.i+4]), 16, 16)
			if err != nil || (v >= 0xd800 && v < 0xe000) {
				return nil, false // surrogate pairs: leave to protojson
			}
			t.i += 4
			buf = utf8.AppendRune(buf, rune(v))
		default:
			return nil, false
		}
	}
	return nil, false
}

// scalar reads a number or a literal (true, false, null) as its text.
func (t *scanner) scalar() ([]byte, bool) {
	t.ws()
	start := t.i
	for t.i < len(t.b) {
		c := t.b[t.i]
		if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			break
		}
		t.i++
	}
	return t.b[start:t.i], t.i > start
}

// field is md's field named name (JSON or text name), or nil.
func (t *scanner) field(md protoreflect.MessageDescriptor, name []byte) protoreflect.FieldDescriptor {
	if t.ix != nil {
		if m, ok := t.ix.fields[md]; ok {
			return m[string(name)]
		}
	}
	fields := md.Fields()
	fd := fields.ByJSONName(string(name))
	if fd == nil {
		fd = fields.ByTextName(string(name))
	}
	return fd
}

// enumValue is the number of en's value named name.
func (t *scanner) enumValue(en protoreflect.EnumDescriptor, name []byte) (int32, bool) {
	if t.ix != nil {
		if m, ok := t.ix.enums[en]; ok {
			v, ok := m[string(name)]
			return v, ok
		}
	}
	ev := en.Values().ByName(protoreflect.Name(name))
	if ev == nil {
		return 0, false
	}
	return int32(ev.Number()), true
}

func (t *scanner) message(dst []byte, md protoreflect.MessageDescriptor) ([]byte, bool) {
	if !t.eat('{') {
		return dst, false
	}
	if t.eat('}') {
		return dst, true
	}
	for {
		name, ok := t.str()
		if !ok || !t.eat(':') {
			return dst, false
		}
		fd := t.field(md, name)
		if fd == nil || fd.IsMap() || fd.IsWeak() {
			return dst, false
		}
		t.ws()
		if t.peek() == 'n' { // null: the field stays unset
			if lit, _ := t.scalar(); string(lit) != "null" {
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
		// The body is encoded in place after the tag and a byte for its
		// length, and moved when the length takes more.
		at := len(dst)
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		lenAt := len(dst)
		dst = append(dst, 0)
		var ok bool
		switch sub.FullName() {
		case "google.protobuf.Timestamp":
			dst, ok = t.timestamp(dst)
		default:
			if sub.FullName().Parent() == "google.protobuf" {
				return dst[:at], false // wrappers, Struct, Any...: protojson's forms
			}
			dst, ok = t.message(dst, sub)
		}
		if !ok {
			return dst[:at], false
		}
		return putLength(dst, lenAt), true
	case protoreflect.GroupKind:
		return dst, false
	case protoreflect.StringKind:
		s, ok := t.str()
		if !ok {
			return dst, false
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		return protowire.AppendBytes(dst, s), true
	case protoreflect.BytesKind:
		s, ok := t.str()
		if !ok {
			return dst, false
		}
		at := len(dst)
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		lenAt := len(dst)
		dst = append(dst, 0)
		var n int
		var err error
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			body := len(dst)
			dst = append(dst, make([]byte, enc.DecodedLen(len(s)))...)
			if n, err = enc.Decode(dst[body:], s); err == nil {
				dst = dst[:body+n]
				break
			}
			dst = dst[:body]
		}
		if err != nil {
			return dst[:at], false
		}
		return putLength(dst, lenAt), true
	case protoreflect.BoolKind:
		lit, _ := t.scalar()
		var v uint64
		switch string(lit) {
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
			v, ok := t.enumValue(fd.Enum(), s)
			if !ok {
				return dst, false
			}
			n = int64(v)
		} else {
			lit, _ := t.scalar()
			v, err := strconv.ParseInt(string(lit), 10, 32)
			if err != nil {
				return dst, false
			}
			n = v
		}
		dst = protowire.AppendTag(dst, num, protowire.VarintType)
		return protowire.AppendVarint(dst, uint64(n)), true
	}
	// Numbers: a JSON number, or a string holding one.
	var lit []byte
	var ok bool
	if t.peek() == '"' {
		lit, ok = t.str()
	} else {
		lit, ok = t.scalar()
	}
	if !ok || len(lit) == 0 || (lit[0] != '-' && (lit[0] < '0' || lit[0] > '9')) {
		return dst, false
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		bits := 64
		if k := fd.Kind(); k == protoreflect.Int32Kind || k == protoreflect.Sint32Kind || k == protoreflect.Sfixed32Kind {
			bits = 32
		}
		v, err := strconv.ParseInt(string(lit), 10, bits)
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
		v, err := strconv.ParseUint(string(lit), 10, bits)
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
		v, err := strconv.ParseFloat(string(lit), 64)
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

// putLength writes, as a varint at dst[at], the length of what follows
// the byte kept for it there, moving that when the varint takes more.
func putLength(dst []byte, at int) []byte {
	n := len(dst) - at - 1
	size := protowire.SizeVarint(uint64(n))
	if size > 1 {
		dst = append(dst, make([]byte, size-1)...)
		copy(dst[at+size:], dst[at+1:at+1+n])
	}
	protowire.AppendVarint(dst[:at], uint64(n))
	return dst
}

// timestamp reads an RFC 3339 string as a google.protobuf.Timestamp body,
// appended to dst.
func (t *scanner) timestamp(dst []byte) ([]byte, bool) {
	s, ok := t.str()
	if !ok {
		return dst, false
	}
	sec, nanos, ok := parseRFC3339(s)
	if !ok {
		ts, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil || ts.Year() < 1 || ts.Year() > 9999 {
			return dst, false
		}
		sec, nanos = ts.Unix(), int32(ts.Nanosecond())
	}
	return secondsNanos(dst, sec, nanos), true
}

// parseRFC3339 reads the common forms of an RFC 3339 time without
// allocating: 2006-01-02T15:04:05, an optional fraction of up to 9
// digits, and Z or an offset ±hh:mm. ok is false for anything else (the
// caller then asks time.Parse).
func parseRFC3339(s []byte) (sec int64, nanos int32, ok bool) {
	num := func(b []byte) (int, bool) {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return 0, 0, false
	}
	y, ok1 := num(s[0:4])
	mo, ok2 := num(s[5:7])
	d, ok3 := num(s[8:10])
	h, ok4 := num(s[11:13])
	mi, ok5 := num(s[14:16])
	se, ok6 := num(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59 {
		return 0, 0, false
	}
	rest := s[19:]
	if rest[0] == '.' {
		k := 1
		var f int32
		for ; k < len(rest) && rest[k] >= '0' && rest[k] <= '9'; k++ {
			if k > 9 {
				return 0, 0, false
			}
			f = f*10 + int32(rest[k]-'0')
		}
		if k == 1 {
			return 0, 0, false
		}
		for j := k; j <= 9; j++ {
			f *= 10
		}
		nanos, rest = f, rest[k:]
	}
	off := 0
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := num(rest[1:3])
		om, ok2 := num(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, 0, false
		}
		off = (oh*60 + om) * 60
		if rest[0] == '-' {
			off = -off
		}
	default:
		return 0, 0, false
	}
	tm := time.Date(y, time.Month(mo), d, h, mi, se, 0, time.UTC)
	if tm.Day() != d { // February 30th and the like: time.Parse refuses it
		return 0, 0, false
	}
	return tm.Unix() - int64(off), nanos, true
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
