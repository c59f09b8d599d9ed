package scenario

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/yamlnode"
)

// This file is the one way a section of a scenario becomes a Go value: a
// plug-in's configuration, a phase, the phase defaults, a fault policy, a
// threshold. The value's type says what the section holds (its fields'
// yaml tags are the keys, a `jsonschema:"required"` tag makes a key
// required, a SetDefaults method fills a new value in before it is
// decoded, an UnmarshalText method reads a scalar), the decoder reads it
// strictly with every problem located at its node, and the schema is
// reflected from the same type by the same rules (schema.go), so that the
// two cannot drift apart.

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	defaulter       = reflect.TypeFor[interface{ SetDefaults() }]()
)

// structField is one key of a struct type: its yaml name and where the
// field is (through inlined structs).
type structField struct {
	key      string
	index    []int
	required bool
	field    reflect.StructField
}

// keysOf lists the keys of a struct type in field order, inlined structs'
// keys in place. The lists are kept: a type's keys never change.
func keysOf(t reflect.Type) []structField {
	if k, ok := keyCache.Load(t); ok {
		return k.([]structField)
	}
	k := listKeys(t)
	keyCache.Store(t, k)
	return k
}

var keyCache sync.Map // reflect.Type -> []structField

func listKeys(t reflect.Type) []structField {
	var out []structField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") || f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for _, in := range listKeys(f.Type) {
				in.index = append([]int{i}, in.index...)
				out = append(out, in)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		req := false
		for _, o := range strings.Split(f.Tag.Get("jsonschema"), ",") {
			req = req || o == "required"
		}
		out = append(out, structField{key: name, index: []int{i}, required: req, field: f})
	}
	return out
}

// keyNames returns the keys' names.
func keyNames(fs []structField) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.key
	}
	return out
}

// isText reports whether values of t read themselves from a scalar.
func isText(t reflect.Type) bool { return reflect.PointerTo(t).Implements(textUnmarshaler) }

// newValue returns a new value of type t (a pointer to it), filled in by
// its SetDefaults method when it has one.
func newValue(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if p.Type().Implements(defaulter) {
		p.Interface().(interface{ SetDefaults() }).SetDefaults()
	}
	return p
}

// into decodes node n, found at path, into v (settable). It reports every
// problem at its node and returns false when any was found.
func (d *decoder) into(n ast.Node, path string, v reflect.Value) bool {
	n = unwrap(n)
	t := v.Type()
	if _, null := n.(*ast.NullNode); null || n == nil {
		d.add(n, path, "expected %s, got nothing: give a value, or remove the key", want(t))
		return false
	}
	if t == reflect.TypeFor[section]() {
		v.Set(reflect.ValueOf(section{node: n}))
		return true
	}
	if t.Kind() == reflect.Pointer {
		if v.IsNil() {
			p := newValue(t.Elem())
			if !d.into(n, path, p.Elem()) {
				return false
			}
			v.Set(p)
			return true
		}
		return d.into(n, path, v.Elem())
	}
	_, mapping := yamlnode.Pairs(n)
	if isText(t) && !(mapping && t.Kind() == reflect.Struct) {
		s, ok := yamlScalar(n)
		if !ok {
			d.add(n, path, "expected %s, got %s", want(t), kindOf(n))
			return false
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			d.add(n, path, "%v", err)
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		fs, ok := d.fields(n, path, nil)
		if !ok {
			return false
		}
		return d.structFields(n, fs, path, v, "")
	case reflect.Slice:
		items, ok := d.list(n, path)
		if !ok {
			return false
		}
		out := reflect.MakeSlice(t, 0, len(items))
		good := true
		for i, it := range items {
			// Every item is kept, decoded or not, so that the i-th value
			// is the i-th item of the list.
			e := newValue(t.Elem()).Elem()
			good = d.into(it, fmt.Sprintf("%s[%d]", path, i), e) && good
			out = reflect.Append(out, e)
		}
		v.Set(out)
		return good
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			d.add(n, path, "cannot decode a map with %s keys", t.Key())
			return false
		}
		fs, ok := d.fields(n, path, nil)
		if !ok {
			return false
		}
		m := reflect.MakeMapWithSize(t, len(fs))
		good := true
		for _, f := range fs {
			e := newValue(t.Elem()).Elem()
			if d.into(f.val, join(path, f.key), e) {
				m.SetMapIndex(reflect.ValueOf(f.key).Convert(t.Key()), e)
			} else {
				good = false
			}
		}
		v.Set(m)
		return good
	case reflect.Interface:
		var x any
		if err := yaml.NodeToValue(n, &x); err != nil {
			d.add(n, path, "%v", err)
			return false
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return true
	case reflect.String:
		s, ok := yamlScalar(n)
		if !ok {
			d.add(n, path, "expected %s, got %s", want(t), kindOf(n))
			return false
		}
		v.SetString(s)
		return true
	case reflect.Bool:
		s, ok := d.typed(n, path, t)
		if !ok {
			return false
		}
		switch s {
		case "true", "True", "TRUE":
			v.SetBool(true)
		case "false", "False", "FALSE":
			v.SetBool(false)
		default:
			d.add(n, path, "expected true or false, got %q", s)
			return false
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s, ok := d.typed(n, path, t)
		if !ok {
			return false
		}
		return d.setInt(n, path, v, s)
	case reflect.Float32, reflect.Float64:
		s, ok := d.typed(n, path, t)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			d.add(n, path, "expected a number, got %q", s)
			return false
		}
		v.SetFloat(f)
		return true
	}
	d.add(n, path, "cannot decode %s", t)
	return false
}

// setInt sets the integer v from the text s: a whole number, or a number
// with no fraction (8.0, as JSON Schema's integer takes it).
func (d *decoder) setInt(n ast.Node, path string, v reflect.Value, s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	i, ierr := strconv.ParseInt(s, 10, 64)
	if ierr != nil && err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		i, ierr = int64(f), nil
	}
	switch {
	case ierr != nil && (err == nil && f == math.Trunc(f) || errors.Is(ierr, strconv.ErrRange)):
		d.add(n, path, "%s is too large a number for this key", s)
	case ierr != nil:
		d.add(n, path, "expected a whole number, got %q", s)
	case v.CanInt() && !v.OverflowInt(i):
		v.SetInt(i)
		return true
	case v.CanUint() && i < 0:
		d.add(n, path, "%s is negative: give a whole number of 0 or more", s)
	case v.CanUint() && !v.OverflowUint(uint64(i)):
		v.SetUint(uint64(i))
		return true
	default:
		d.add(n, path, "%s is too large a number for this key", s)
	}
	return false
}

// typed returns the text of a scalar written as a number or true/false
// (or put in place by ${VAR}); a quoted string is refused, as a JSON
// Schema refuses "8" where a number is.
func (d *decoder) typed(n ast.Node, path string, t reflect.Type) (string, bool) {
	switch v := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	case *ast.StringNode:
		if d.subst[v] {
			return strings.TrimSpace(v.Value), true
		}
		if _, err := strconv.ParseFloat(v.Value, 64); err == nil || t.Kind() == reflect.Bool && (v.Value == "true" || v.Value == "false") {
			d.add(n, path, "expected %s, got the string %q: write it without quotes", want(t), v.Value)
		} else {
			d.add(n, path, "expected %s, got %q", want(t), v.Value)
		}
		return "", false
	}
	d.add(n, path, "expected %s, got %s", want(t), kindOf(n))
	return "", false
}

// yamlScalar is the text of a scalar node of any kind.
func yamlScalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.InfinityNode:
		return v.GetToken().Value, true
	case *ast.NanNode:
		return v.GetToken().Value, true
	}
	return yamlnode.Scalar(n)
}

// want names what a value of type t is written as, for messages.
func want(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[pipebench.Duration]():
		return "a duration like 90s"
	case reflect.TypeFor[pipebench.Rate]():
		return "a rate like 500/s"
	case reflect.TypeFor[pipebench.ByteSize]():
		return "a size like 512MiB"
	}
	if isText(t) && t.Kind() != reflect.Struct {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Interface:
		return "a value"
	}
	return "a whole number"
}

// structFields decodes the pairs fs of a mapping (node n, at path) into
// the struct v: unknown keys get a "did you mean", required keys that are
// missing are reported at the mapping. what, when not "", names the owner
// in the unknown-key message ("for driver \"http\"").
func (d *decoder) structFields(n ast.Node, fs []field, path string, v reflect.Value, what string) bool {
	keys := keysOf(v.Type())
	good := true
	got := make(map[string]bool, len(fs))
	for _, f := range fs {
		k, ok := findKey(keys, f.key)
		if !ok {
			d.add(f.kn, join(path, f.key), "unknown key %q%s%s", f.key, what, didYouMean(f.key, keyNames(keys)))
			good = false
			continue
		}
		got[f.key] = true
		if !d.into(f.val, join(path, f.key), v.FieldByIndex(k.index)) {
			good = false
		}
	}
	for _, k := range keys {
		if k.required && !got[k.key] {
			msg := fmt.Sprintf("missing: %s needs %s", noun(path), k.key)
			if ex := k.field.Tag.Get("example"); ex != "" {
				msg += fmt.Sprintf(", like `%s: %s`", k.key, ex)
			}
			d.add(n, join(path, k.key), "%s", msg)
			good = false
		}
	}
	return good
}

func findKey(keys []structField, key string) (structField, bool) {
	for _, k := range keys {
		if k.key == key {
			return k, true
		}
	}
	return structField{}, false
}

// noun names what the mapping at path is, for "missing" messages: "every
// scenario" at the top, "every phase" for phases[2], "a ramp" for
// phases[0].ramp.
func noun(path string) string {
	if path == "" {
		return "every scenario"
	}
	last := path[strings.LastIndex(path, ".")+1:]
	if name, _, indexed := strings.Cut(last, "["); indexed {
		return "every " + strings.TrimSuffix(name, "s")
	}
	if strings.HasSuffix(last, "s") {
		return "a " + last + " section" // producers, outages: not "a producers"
	}
	return "a " + last
}

// report puts each line of err ("key.path: message") at the node of that
// key under n (a section found at path): at its value when the key is
// written, else at the nearest written mapping above it. A line naming no
// key is put at n.
func (d *decoder) report(err error, n ast.Node, path string) {
	if err == nil {
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		key, msg := pipebench.SplitKey(line)
		if key == "" {
			d.add(n, path, "%s", line)
			continue
		}
		at := locate(n, key)
		d.add(at, join(path, key), "%s", msg)
	}
}

// locate walks key (a.b[2].c) down from n and returns the node of the
// deepest part of it that is written.
func locate(n ast.Node, key string) ast.Node {
	cur := n
	for _, part := range splitPath(key) {
		next := child(cur, part)
		if next == nil {
			return cur
		}
		cur = next
	}
	return cur
}

// splitPath splits a.b[2].c into a, b, [2], c.
func splitPath(key string) []string {
	var out []string
	for _, seg := range strings.Split(key, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		if name != "" {
			out = append(out, name)
		}
		for rest != "" {
			idx, more, _ := strings.Cut(rest, "]")
			out = append(out, "["+idx+"]")
			rest = strings.TrimPrefix(more, "[")
		}
	}
	return out
}

// child returns the value of key part (a name, or [i]) of a mapping or
// list node, or nil.
func child(n ast.Node, part string) ast.Node {
	n = unwrap(n)
	if strings.HasPrefix(part, "[") {
		i, err := strconv.Atoi(strings.Trim(part, "[]"))
		seq, ok := n.(*ast.SequenceNode)
		if err != nil || !ok || i < 0 || i >= len(seq.Values) {
			return nil
		}
		return unwrap(seq.Values[i])
	}
	pairs, _ := yamlnode.Pairs(n)
	for _, p := range pairs {
		if yamlnode.KeyOf(p) == part {
			if v := unwrap(p.Value); v != nil {
				if _, null := v.(*ast.NullNode); !null {
					return v
				}
			}
			return p.Key
		}
	}
	return nil
}
