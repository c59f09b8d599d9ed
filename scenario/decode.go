package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/yamlnode"
)

// decoder walks the YAML syntax tree, so that every problem carries the
// line and column of the node it is about.
type decoder struct {
	file string
	p    Params
	errs Errors
	src  []byte // the file, for hints about syntax errors
	// pipelineFaults are the faults.pipeline keys met, checked against
	// the sink and the system under test once the whole file is read.
	pipelineFaults []located
}

// located is a value with the node and path it was read from.
type located struct {
	value string
	node  ast.Node
	path  string
}

// field is one key: value of a mapping.
type field struct {
	key  string
	kn   ast.Node // the key
	val  ast.Node
	pair *ast.MappingValueNode
}

func pos(n ast.Node) (int, int) { return yamlnode.Pos(n) }

// add records a problem at node n.
func (d *decoder) add(n ast.Node, path, format string, args ...any) {
	d.errs = append(d.errs, yamlnode.At(d.file, n, path, fmt.Sprintf(format, args...)))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// kindOf names what a node is, for "expected X, got Y" messages.
func kindOf(n ast.Node) string { return yamlnode.KindOf(n) }

// unwrap looks through anchors, tags and comments.
func unwrap(n ast.Node) ast.Node { return yamlnode.Unwrap(n) }

// fields returns the pairs of a mapping node, reporting a node that is not
// a mapping, duplicate keys, and (when known is not nil) unknown keys with a
// "did you mean".
func (d *decoder) fields(n ast.Node, path string, known []string) ([]field, bool) {
	n = unwrap(n)
	var pairs []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		pairs = v.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{v}
	case *ast.NullNode, nil:
		return nil, true
	default:
		d.add(n, path, "expected a mapping (key: value lines), got %s", kindOf(n))
		return nil, false
	}
	seen := map[string]bool{}
	var out []field
	for _, p := range pairs {
		key := strings.TrimSpace(p.Key.String())
		if k, ok := p.Key.(*ast.StringNode); ok {
			key = k.Value
		}
		if seen[key] {
			d.add(p.Key, join(path, key), "key %q appears twice", key)
			continue
		}
		seen[key] = true
		if known != nil && !contains(known, key) {
			d.add(p.Key, join(path, key), "unknown key %q%s", key, didYouMean(key, known))
			continue
		}
		out = append(out, field{key: key, kn: p.Key, val: unwrap(p.Value), pair: p})
	}
	return out, true
}

func contains(list []string, s string) bool { return yamlnode.Contains(list, s) }

// scalar returns the text of a scalar node.
func (d *decoder) scalar(n ast.Node, path, want string) (string, bool) {
	if v, ok := yamlnode.Scalar(n); ok {
		return v, true
	}
	d.add(n, path, "expected %s, got %s", want, kindOf(n))
	return "", false
}

func (d *decoder) str(f field, path string) string {
	s, _ := d.scalar(f.val, join(path, f.key), "a string")
	return s
}

func (d *decoder) integer(f field, path string) (int, bool) {
	p := join(path, f.key)
	s, ok := d.scalar(f.val, p, "a whole number")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		d.add(f.val, p, "expected a whole number, got %q", s)
		return 0, false
	}
	return v, true
}

// byteSize reads a size: a whole number of bytes or a number with a unit
// (512MiB); it must be at least 1 KiB.
func (d *decoder) byteSize(f field, path string) (int64, bool) {
	p := join(path, f.key)
	s, ok := d.scalar(f.val, p, "a size")
	if !ok {
		return 0, false
	}
	v, err := pipebench.ParseBytes(s)
	if err != nil {
		d.add(f.val, p, "%v", err)
		return 0, false
	}
	if v < 1<<10 {
		d.add(f.val, p, "%s is below 1KiB: give the most bytes of requests awaiting answers, like 512MiB", s)
		return 0, false
	}
	return v, true
}

func (d *decoder) float(f field, path string) (float64, bool) {
	p := join(path, f.key)
	s, ok := d.scalar(f.val, p, "a number")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d.add(f.val, p, "expected a number, got %q", s)
		return 0, false
	}
	return v, true
}

func (d *decoder) rate(n ast.Node, path string) (pipebench.Rate, bool) {
	s, ok := d.scalar(n, path, "a rate like 500/s")
	if !ok {
		return 0, false
	}
	r, err := pipebench.ParseRate(s)
	if err != nil {
		d.add(n, path, "%v", err)
		return 0, false
	}
	return r, true
}

func (d *decoder) duration(n ast.Node, path string) (pipebench.Duration, bool) {
	s, ok := d.scalar(n, path, "a duration like 90s")
	if !ok {
		return 0, false
	}
	v, err := pipebench.ParseDuration(s)
	if err != nil {
		d.add(n, path, "%v", err)
		return 0, false
	}
	return v, true
}

func (d *decoder) list(n ast.Node, path string) ([]ast.Node, bool) {
	switch v := unwrap(n).(type) {
	case *ast.SequenceNode:
		out := make([]ast.Node, len(v.Values))
		for i, x := range v.Values {
			out[i] = unwrap(x)
		}
		return out, true
	case *ast.NullNode, nil:
		return nil, true
	}
	d.add(n, path, "expected a list, got %s", kindOf(n))
	return nil, false
}

var envRef = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// substitute replaces ${VAR} and ${VAR:-default} in every string of the
// tree; $$ stands for a literal $.
func (d *decoder) substitute(root ast.Node) {
	ast.Walk(visitFunc(func(n ast.Node) {
		s, ok := n.(*ast.StringNode)
		if !ok || !strings.Contains(s.Value, "$") {
			return
		}
		before := s.Value
		s.Value = envRef.ReplaceAllStringFunc(s.Value, func(m string) string {
			if m == "$$" {
				return "$"
			}
			sub := envRef.FindStringSubmatch(m)
			if v, ok := d.p.Env(sub[1]); ok && v != "" {
				return v
			}
			if sub[2] != "" {
				return sub[3]
			}
			d.add(s, strings.TrimPrefix(s.GetPath(), "$."), "environment variable %s is not set: set it, or write ${%s:-default}", sub[1], sub[1])
			return ""
		})
		if s.Value != before {
			retoken(s)
		}
	}), root)
}

// retoken makes the node's token say what its value now says. The YAML
// library decodes types with an UnmarshalText method (pipebench.Secret,
// Duration, Rate) from the token's source text, not from the node's value:
// without this, secret_headers: {A: "${TOKEN}"} sent the literal ${TOKEN}.
// The new text is a double-quoted YAML string, so any value (quotes,
// backslashes, a leading '-') reads back exactly; the whitespace around
// the old text is kept so the formatter's layout stays the same.
func retoken(s *ast.StringNode) {
	tk := s.GetToken()
	if tk == nil {
		return
	}
	origin := tk.Origin
	core := strings.TrimSpace(origin)
	lead, trail := "", ""
	if core != "" {
		i := strings.Index(origin, core)
		lead, trail = origin[:i], origin[i+len(core):]
	}
	tk.Value = s.Value
	tk.Type = token.DoubleQuoteType
	tk.Origin = lead + strconv.Quote(s.Value) + trail
}

type visitFunc func(ast.Node)

func (f visitFunc) Visit(n ast.Node) ast.Visitor { f(n); return f }

// decode is the whole of Parse.
func (d *decoder) decode(data []byte) *Scenario {
	sc := &Scenario{File: d.file, Batch: DefaultBatch, Interval: DefaultInterval, Drain: DefaultDrain}
	if strings.TrimSpace(string(data)) == "" {
		d.add(nil, "", "the file is empty: a scenario needs at least name, target and phases")
		return nil
	}
	d.src = data
	tks, ok := d.tokens(data)
	if !ok {
		return nil
	}
	f, err := parser.Parse(tks, 0)
	if err != nil {
		d.yamlError(err, "", nil)
		return nil
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		d.add(nil, "", "the file holds no YAML document")
		return nil
	}
	if len(f.Docs) > 1 {
		d.add(f.Docs[1].Body, "", "the file holds %d YAML documents; a scenario is one", len(f.Docs))
	}
	body := unwrap(f.Docs[0].Body)
	d.substitute(body)
	top, ok := d.fields(body, "", topKeys)
	if !ok {
		return nil
	}
	byKey := map[string]field{}
	for _, fl := range top {
		byKey[fl.key] = fl
	}
	var defaults phaseDefaults
	defaults.maxInFlight = DefaultMaxInFlight
	for _, fl := range top {
		switch fl.key {
		case "name":
			sc.Name = d.str(fl, "")
		case "version":
			sc.Version = d.str(fl, "")
		case "case":
			sc.Case = d.str(fl, "")
		case "description":
			sc.Description = d.str(fl, "")
		case "labels":
			sc.Labels = d.stringMap(fl.val, "labels")
		case "interval":
			if v, ok := d.duration(fl.val, "interval"); ok {
				if v <= 0 {
					d.add(fl.val, "interval", "must be more than 0")
				}
				sc.Interval = v
			}
		case "drain":
			if v, ok := d.duration(fl.val, "drain"); ok {
				sc.Drain = v
			}
		case "defaults":
			defaults = d.defaults(fl.val)
		}
	}
	if sc.Name == "" {
		d.add(body, "name", "missing: every scenario needs a name, like `name: checkout-load`")
	} else if !validName.MatchString(sc.Name) {
		d.add(byKey["name"].val, "name", "%q may hold only letters, digits, '.', '_' and '-'", sc.Name)
	}
	reg := d.p.Registry
	if fl, ok := byKey["target"]; ok {
		c, _ := d.plugin(fl.val, "target", "driver", true, nil, catalog(reg.Drivers))
		sc.Target = c
	} else {
		d.add(body, "target", "missing: say where to send, like `target: {driver: http, url: http://127.0.0.1:8080/}`")
	}
	sc.Generator.Type = DefaultGenerator
	wl, hasWL := byKey["workload"]
	var wlNode ast.Node
	if hasWL {
		wlNode = wl.val
	}
	gen, common := d.plugin(wlNode, "workload", "generator", false, []string{"batch"}, catalog(reg.Generators))
	sc.Generator = gen
	if b, ok := common["batch"]; ok {
		if v, ok := d.integer(b, "workload"); ok {
			if v < 1 {
				d.add(b.val, "workload.batch", "must be at least 1")
			}
			sc.Batch = v
		}
	}
	d.checkFit(reg, sc.Generator.Type, sc.Target.Type, wlNode, body)
	if fl, ok := byKey["sut"]; ok {
		c, _ := d.plugin(fl.val, "sut", "type", true, nil, catalog(reg.SUTs))
		sc.SUT = &c
	}
	if fl, ok := byKey["sink"]; ok {
		c, _ := d.plugin(fl.val, "sink", "type", true, nil, catalog(reg.Sinks))
		sc.Sink = &c
	}
	if fl, ok := byKey["observers"]; ok {
		items, _ := d.list(fl.val, "observers")
		for i, it := range items {
			path := fmt.Sprintf("observers[%d]", i)
			c, common := d.plugin(it, path, "type", true, []string{"name", "interval"}, catalog(reg.Observers))
			c.Name = c.Type
			if n, ok := common["name"]; ok {
				c.Name = d.str(n, path)
			}
			if iv, ok := common["interval"]; ok {
				c.Interval, _ = d.duration(iv.val, join(path, "interval"))
			}
			sc.Observers = append(sc.Observers, c)
		}
	}
	if fl, ok := byKey["phases"]; ok {
		sc.Phases = d.phases(fl.val, defaults)
	} else {
		d.add(body, "phases", "missing: add at least one phase, like `phases: [{name: load, duration: 1m, rate: 100/s}]`")
	}
	d.checkPipelineFaults(sc)
	if fl, ok := byKey["thresholds"]; ok {
		sc.Thresholds = d.thresholds(fl.val, sc.Phases)
	}
	if sc.Case == "" {
		sc.Case = sc.Name
	}
	return sc
}

var topKeys = []string{"name", "version", "case", "description", "labels", "sut", "target", "workload", "sink",
	"observers", "interval", "drain", "defaults", "phases", "thresholds"}

var validName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (d *decoder) stringMap(n ast.Node, path string) map[string]string {
	fs, _ := d.fields(n, path, nil)
	m := map[string]string{}
	for _, f := range fs {
		m[f.key] = d.str(f, path)
	}
	return m
}

// pluginCatalog is what plugin needs of a pipebench.Catalog.
type pluginCatalog struct {
	kind   string
	names  []string
	config func(name string) (func() any, bool)
}

func catalog[T any](c *pipebench.Catalog[T]) pluginCatalog {
	return pluginCatalog{kind: c.Kind(), names: c.Names(), config: func(name string) (func() any, bool) {
		f, ok := c.Lookup(name)
		return f.NewConfig, ok
	}}
}

// plugin decodes a plug-in section: typeKey names the plug-in, common keys
// are returned to the caller, every other key goes to the plug-in's
// configuration, decoded strictly and validated.
func (d *decoder) plugin(n ast.Node, path, typeKey string, required bool, common []string, cat pluginCatalog) (Component, map[string]field) {
	var c Component
	commons := map[string]field{}
	fs, ok := d.fields(n, path, nil)
	if !ok {
		return c, commons
	}
	var rest []field
	var typeField *field
	for i, f := range fs {
		switch {
		case f.key == typeKey:
			typeField = &fs[i]
			c.Type = d.str(f, path)
		case contains(common, f.key):
			commons[f.key] = f
		default:
			rest = append(rest, f)
		}
	}
	if typeField == nil {
		if required {
			d.add(n, join(path, typeKey), "missing: choose one of %s", strings.Join(cat.names, ", "))
			return c, commons
		}
		c.Type = DefaultGenerator
	}
	newConfig, found := cat.config(c.Type)
	if !found {
		at := n
		if typeField != nil {
			at = typeField.val
		}
		d.add(at, join(path, typeKey), "unknown %s %q%s; valid: %s", cat.kind, c.Type, didYouMean(c.Type, cat.names), strings.Join(cat.names, ", "))
		return c, commons
	}
	if newConfig == nil {
		for _, f := range rest {
			d.add(f.kn, join(path, f.key), "unknown key %q: %s %q takes no settings", f.key, cat.kind, c.Type)
		}
		return c, commons
	}
	cfg := newConfig()
	c.Config = cfg
	known := yamlKeys(cfg)
	valid := append(append([]string{typeKey}, common...), known...)
	var keep []*ast.MappingValueNode
	for _, f := range rest {
		if !contains(known, f.key) {
			d.add(f.kn, join(path, f.key), "unknown key %q for %s %q%s", f.key, cat.kind, c.Type, didYouMean(f.key, valid))
			continue
		}
		keep = append(keep, f.pair)
	}
	if len(keep) > 0 {
		m := &ast.MappingNode{BaseNode: &ast.BaseNode{}, Start: keep[0].Key.GetToken(), Values: keep}
		if err := yaml.NodeToValue(m, cfg, yaml.Strict()); err != nil {
			d.yamlError(err, path, cfg)
			return c, commons
		}
	}
	if v, ok := cfg.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				line = strings.TrimSpace(line)
				if line == "" {
					continue
				}
				// "connections: must be at least 1" is about key
				// connections: point at it.
				key, msg, found := strings.Cut(line, ": ")
				at, p := n, path
				if found {
					for _, f := range rest {
						if f.key == strings.TrimSpace(strings.SplitN(key, ".", 2)[0]) {
							at, p, line = f.kn, join(path, strings.TrimSpace(key)), msg
						}
					}
				}
				d.add(at, p, "%s", line)
			}
		}
	}
	return c, commons
}

// yamlKeys lists the top-level yaml keys of a configuration struct.
func yamlKeys(cfg any) []string {
	t := reflect.TypeOf(cfg)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			keys = append(keys, yamlKeys(reflect.New(f.Type).Interface())...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, name)
	}
	return keys
}

var typeErr = regexp.MustCompile(`cannot unmarshal (\S+) into Go (?:struct field (\S+)|value) of type (\S+)`)

// yamlError turns an error of the YAML library into a located problem.
func (d *decoder) yamlError(err error, path string, cfg any) {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		d.add(nil, path, "%v", err)
		return
	}
	msg := ye.GetMessage()
	if m := typeErr.FindStringSubmatch(msg); m != nil {
		field := m[2]
		if i := strings.LastIndex(field, "."); i >= 0 {
			field = field[i+1:]
		}
		if field != "" {
			path = join(path, yamlName(cfg, field))
		}
		msg = fmt.Sprintf("expected %s, got %s", friendlyType(m[3]), friendlyType(m[1]))
	}
	line, col := 0, 0
	if tk := ye.GetToken(); tk != nil {
		line, col = tk.Position.Line, tk.Position.Column
	}
	if flowEnvRef(d.src, line) {
		msg += `: a ${VAR} inside { } must be quoted, like "${VAR:-default}", or written in block style`
	}
	d.errs = append(d.errs, Problem{File: d.file, Line: line, Column: col, Path: path, Msg: msg})
}

// flowEnvRef tells whether the given line (1-based) of src, or the one
// before it, puts a ${VAR} reference unquoted inside a { } flow mapping,
// which YAML reads as the start of another mapping.
func flowEnvRef(src []byte, line int) bool {
	lines := strings.Split(string(src), "\n")
	for _, n := range []int{line, line - 1} {
		if n < 1 || n > len(lines) {
			continue
		}
		l := lines[n-1]
		open, ref := strings.IndexByte(l, '{'), strings.Index(l, "${")
		if ref > open && open >= 0 && !strings.Contains(l, `"${`) && !strings.Contains(l, `'${`) {
			return true
		}
	}
	return false
}

func friendlyType(t string) string {
	switch {
	case strings.HasSuffix(t, "pipebench.Duration"):
		return "a duration like 90s"
	case strings.HasSuffix(t, "pipebench.Rate"):
		return "a rate like 500/s"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "map"), t == "mapping":
		return "a mapping"
	case strings.HasPrefix(t, "[]"), t == "sequence", t == "array":
		return "a list"
	}
	return t
}

// yamlName returns the yaml key of the Go field name in cfg's struct type,
// or name itself.
func yamlName(cfg any, name string) string {
	if cfg == nil {
		return name
	}
	t := reflect.TypeOf(cfg)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return name
	}
	if f, ok := t.FieldByName(name); ok {
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" && tag != "-" {
			return tag
		}
	}
	return name
}

// checkFit refuses a generator whose payload the driver cannot send, naming
// the generators that fit the driver.
func (d *decoder) checkFit(reg *pipebench.Registry, gen, drv string, wl, body ast.Node) {
	gf, gok := reg.Generators.Lookup(gen)
	df, dok := reg.Drivers.Lookup(drv)
	if !gok || !dok || pipebench.Fits(gf.Produces, df.Accepts) {
		return
	}
	var fit []string
	for _, name := range reg.Generators.Names() {
		if g, _ := reg.Generators.Lookup(name); pipebench.Fits(g.Produces, df.Accepts) && len(g.Produces) > 0 {
			fit = append(fit, name)
		}
	}
	at, path := wl, "workload.generator"
	if at == nil {
		at, path = body, "workload"
	}
	msg := fmt.Sprintf("driver %q cannot send what generator %q makes (%s)", drv, gen, payloads(gf.Produces))
	if wl == nil {
		msg = fmt.Sprintf("driver %q cannot send the default generator %q (%s): add a workload", drv, gen, payloads(gf.Produces))
	}
	if len(fit) > 0 {
		msg += fmt.Sprintf("; generators that fit %s: %s", drv, strings.Join(fit, ", "))
	}
	d.add(at, path, "%s", msg)
}

func payloads(ps []pipebench.Payload) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}
