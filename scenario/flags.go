package scenario

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pipebench/pipebench"
)

// PolicyFlag is one key of pipebench.FaultPolicy as a command-line flag,
// made from the type as the scenario decoder and the schema are, so that
// `pipebench sink` has a flag for every fault rule without a line of its
// own: the flag's name is the key with '-' for '_' (or the field's flag
// tag), its usage the first sentence of the field's doc comment, and its
// value is read in the field's text form (0.7, 503, 500/s, 100ms,
// uniform:1ms:20ms, 30s:20s; a list's flag is given once per item).
type PolicyFlag struct {
	Name  string // error-ratio
	Key   string // error_ratio
	Usage string
	// Value sets the field of the policy FaultFlags was given; it is a
	// pflag.Value (Set, String, Type).
	Value *PolicyValue
}

// PolicyValue sets one field of a fault policy from a flag's text.
type PolicyValue struct {
	v    reflect.Value
	kind string
}

// FaultFlags returns a flag for every key of p's type, each setting its
// field of p.
func FaultFlags(p *pipebench.FaultPolicy) []PolicyFlag {
	v := reflect.ValueOf(p).Elem()
	var out []PolicyFlag
	for _, k := range keysOf(v.Type()) {
		name := k.field.Tag.Get("flag")
		if name == "" {
			name = strings.ReplaceAll(k.key, "_", "-")
		}
		usage := firstSentence(describe(v.Type(), k.field.Name, "--"+name))
		if k.field.Type.Kind() == reflect.Slice {
			usage += " (repeatable)"
		}
		out = append(out, PolicyFlag{Name: name, Key: k.key, Usage: usage,
			Value: &PolicyValue{v: v.FieldByIndex(k.index), kind: flagKind(k.field.Type)}})
	}
	return out
}

// SetKey sets key of the configuration cfg points to (a plug-in's, as a
// scenario names its keys) from its text form, as the decoder reads a
// scalar: how `pipebench sink` fills its sink's configuration, made by the
// sink's factory, from its flags.
func SetKey(cfg any, key, text string) error {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%s: the configuration is a %T, not a pointer to a struct", key, cfg)
	}
	for _, k := range keysOf(v.Elem().Type()) {
		if k.key == key {
			if err := (&PolicyValue{v: v.Elem().FieldByIndex(k.index)}).Set(text); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: no such key (keys: %s)", key, strings.Join(keyNames(keysOf(v.Elem().Type())), ", "))
}

// FlagProblems rewrites the problems of a fault policy's Validate
// ("error_ratio: ..." lines) with the names of the flags they are about
// ("--error-ratio: ..."), joined by "; ".
func FlagProblems(err error, flags []PolicyFlag) string {
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		key, msg := pipebench.SplitKey(line)
		first, _, _ := strings.Cut(key, ".")
		first, _, _ = strings.Cut(first, "[")
		for _, f := range flags {
			if f.Key == first {
				line = "--" + f.Name + ": " + msg
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "; ")
}

// firstSentence is s up to its first full stop followed by a capital.
func firstSentence(s string) string {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && s[i+2] >= 'A' && s[i+2] <= 'Z' {
			return s[:i]
		}
	}
	return strings.TrimSuffix(s, ".")
}

func flagKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch t {
	case durationType:
		return "duration"
	case rateType:
		return "rate"
	case latencyType:
		return "latency"
	case windowType:
		return "start:duration"
	}
	return t.Kind().String()
}

// Set reads s into the field (a list's gets one more item).
func (p *PolicyValue) Set(s string) error {
	v := p.v
	if v.Kind() == reflect.Slice {
		e := newValue(v.Type().Elem()).Elem()
		if err := setText(e, s); err != nil {
			return err
		}
		v.Set(reflect.Append(v, e))
		return nil
	}
	if v.Kind() == reflect.Pointer {
		e := newValue(v.Type().Elem())
		if err := setText(e.Elem(), s); err != nil {
			return err
		}
		v.Set(e)
		return nil
	}
	return setText(v, s)
}

// setText sets v from s as the decoder reads a scalar.
func setText(v reflect.Value, s string) error {
	if isText(v.Type()) {
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	switch {
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.CanFloat():
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(f)
	case v.CanInt():
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v.OverflowInt(i) {
			return fmt.Errorf("%q is not a whole number", s)
		}
		v.SetInt(i)
	default:
		return fmt.Errorf("cannot set a %s from a flag", v.Type())
	}
	return nil
}

// String is the field's value as text ("" when not set).
func (p *PolicyValue) String() string {
	if p == nil || !p.v.IsValid() || p.v.IsZero() {
		return ""
	}
	if p.v.Kind() == reflect.Slice {
		var parts []string
		for i := 0; i < p.v.Len(); i++ {
			parts = append(parts, fmt.Sprint(p.v.Index(i).Interface()))
		}
		return strings.Join(parts, ",")
	}
	if p.v.Kind() == reflect.Pointer {
		return fmt.Sprint(p.v.Elem().Interface())
	}
	return fmt.Sprint(p.v.Interface())
}

// Type names the value's form in help.
func (p *PolicyValue) Type() string { return p.kind }
