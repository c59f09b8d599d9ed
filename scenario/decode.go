package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/yamlnode"
)

// decoder walks the YAML syntax tree, so that every problem carries the
// line and column of the node it is about.
type decoder struct {
	file string
	p    Params
	errs Errors
	src  []byte // the file, for hints about syntax errors
	// subst holds the strings ${VAR} was put in, which stand for any
	// scalar (a number, true/false) as a value written in place would.
	subst map[*ast.StringNode]bool
	// bad holds every path at or under which a problem was found.
	bad map[string]bool
	// more counts the problems found past maxProblems, not kept.
	more int
}

// maxProblems is the most problems reported of one file: past it, the
// rest are counted (a file of thousands of broken items is read in bounded
// memory, and nobody reads a thousand messages).
const maxProblems = 100

// field is one key: value of a mapping.
type field struct {
	key  string
	kn   ast.Node // the key
	val  ast.Node
	pair *ast.MappingValueNode
}

// add records a problem at node n.
func (d *decoder) add(n ast.Node, path, format string, args ...any) {
	if len(d.errs) < maxProblems {
		d.errs = append(d.errs, yamlnode.At(d.file, n, path, fmt.Sprintf(format, args...)))
	} else {
		d.more++
	}
	if d.bad == nil {
		d.bad = map[string]bool{}
	}
	// path and every path above it now hold a problem (see clean).
	for p := path; p != ""; {
		d.bad[p] = true
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
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
	pairs, ok := yamlnode.Pairs(n)
	if !ok {
		if _, null := n.(*ast.NullNode); null || n == nil {
			return nil, true
		}
		d.add(n, path, "expected a mapping (key: value lines), got %s", kindOf(n))
		return nil, false
	}
	seen := map[string]bool{}
	var out []field
	for _, p := range pairs {
		key := yamlnode.KeyOf(p)
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
			d.subst[s] = true
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
		d.yamlError(err)
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
	d.subst = map[*ast.StringNode]bool{}
	d.substitute(body)
	switch body.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		d.add(body, "", "expected a mapping (key: value lines), got %s", kindOf(body))
		return nil
	}
	var top file
	d.into(body, "", reflect.ValueOf(&top).Elem())
	sc.Name, sc.Version, sc.Case, sc.Description, sc.Labels = top.Name, top.Version, top.Case, top.Description, top.Labels
	d.report(top.Validate(), body, "")
	if top.Interval != nil {
		sc.Interval = *top.Interval
	}
	if top.Drain != nil {
		sc.Drain = *top.Drain
	}
	reg := d.p.Registry
	if top.Target.node != nil {
		sc.Target, _ = d.plugin(top.Target.node, "target", "driver", true, nil, catalog(reg.Drivers))
	}
	var wl workloadKeys
	sc.Generator, _ = d.plugin(top.Workload.node, "workload", "generator", false, &wl, catalog(reg.Generators))
	if wl.Batch != nil && *wl.Batch > 0 {
		sc.Batch = *wl.Batch
	}
	d.checkFit(reg, sc.Generator.Type, sc.Target.Type, top.Workload.node, body)
	if top.SUT.node != nil {
		c, _ := d.plugin(top.SUT.node, "sut", "type", true, nil, catalog(reg.SUTs))
		sc.SUT = &c
	}
	if top.Sink.node != nil {
		c, _ := d.plugin(top.Sink.node, "sink", "type", true, nil, catalog(reg.Sinks))
		sc.Sink = &c
	}
	for i, o := range top.Observers {
		path := fmt.Sprintf("observers[%d]", i)
		var common observerKeys
		c, _ := d.plugin(o.node, path, "type", true, &common, catalog(reg.Observers))
		c.Name = common.Name
		if c.Name == "" {
			c.Name = c.Type
		}
		if common.Interval != nil {
			c.Interval = *common.Interval
		}
		sc.Observers = append(sc.Observers, c)
	}
	d.checkResources(sc, top.Target.node, top.Sink.node)
	sc.Phases = d.phases(body, top, sc.Batch)
	d.checkPipelineFaults(body, sc)
	sc.Thresholds = d.thresholds(body, top.Thresholds, sc.Phases)
	if sc.Case == "" {
		sc.Case = sc.Name
	}
	return sc
}

var validName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// pluginCatalog is what plugin and the schema need of a
// pipebench.Catalog.
type pluginCatalog struct {
	kind   string
	names  []string
	config func(name string) (func() any, bool)
	doc    func(name string) string
}

func catalog[T any](c *pipebench.Catalog[T]) pluginCatalog {
	return pluginCatalog{kind: c.Kind(), names: c.Names(),
		config: func(name string) (func() any, bool) {
			f, ok := c.Lookup(name)
			return f.NewConfig, ok
		},
		doc: func(name string) string {
			f, _ := c.Lookup(name)
			return f.Doc
		}}
}

// plugin decodes a plug-in section: typeKey names the plug-in, the keys
// of common (a pointer to a struct, or nil) are decoded into it, every
// other key goes to the plug-in's configuration, decoded strictly and
// validated. ok is false when the section had a problem.
func (d *decoder) plugin(n ast.Node, path, typeKey string, required bool, common any, cat pluginCatalog) (c Component, ok bool) {
	before := len(d.errs)
	defer func() { ok = len(d.errs) == before }()
	fs, good := d.fields(n, path, nil)
	if !good {
		return c, false
	}
	var commonKeys []string
	if common != nil {
		commonKeys = keyNames(keysOf(reflect.TypeOf(common).Elem()))
	}
	var rest, commons []field
	var typeField *field
	for i, f := range fs {
		switch {
		case f.key == typeKey:
			typeField = &fs[i]
			c.Type, _ = d.scalar(f.val, join(path, f.key), "a string")
		case contains(commonKeys, f.key):
			commons = append(commons, f)
		default:
			rest = append(rest, f)
		}
	}
	if common != nil && d.structFields(n, commons, path, reflect.ValueOf(common).Elem(), "") {
		if v, ok := common.(interface{ Validate() error }); ok {
			d.report(v.Validate(), n, path)
		}
	}
	if typeField == nil {
		if required {
			d.add(n, join(path, typeKey), "missing: choose one of %s", strings.Join(cat.names, ", "))
			return c, false
		}
		c.Type = DefaultGenerator
	}
	newConfig, found := cat.config(c.Type)
	if !found {
		at := n
		if typeField != nil {
			at = typeField.val
		}
		if len(cat.names) == 0 {
			// The lean load generator (pipebench-load) carries no
			// embedded system under test at all.
			d.add(at, join(path, typeKey), "%s %q: this program has no %s plug-in (pipebench-load, the load generator alone, carries no embedded system under test): run the scenario with pipebench, or leave %s out and point the target at a system that runs already",
				cat.kind, c.Type, cat.kind, path)
			return c, false
		}
		d.add(at, join(path, typeKey), "unknown %s %q%s; valid: %s", cat.kind, c.Type, didYouMean(c.Type, cat.names), strings.Join(cat.names, ", "))
		return c, false
	}
	if newConfig == nil {
		for _, f := range rest {
			d.add(f.kn, join(path, f.key), "unknown key %q: %s %q takes no settings", f.key, cat.kind, c.Type)
		}
		return c, false
	}
	cfg := newConfig()
	c.Config = cfg
	valid := append(append([]string{typeKey}, commonKeys...), keyNames(keysOf(reflect.TypeOf(cfg).Elem()))...)
	var known []field
	for _, f := range rest {
		if !contains(valid, f.key) {
			d.add(f.kn, join(path, f.key), "unknown key %q for %s %q%s", f.key, cat.kind, c.Type, didYouMean(f.key, valid))
			continue
		}
		known = append(known, f)
	}
	d.structFields(n, known, path, reflect.ValueOf(cfg).Elem(), "")
	if len(d.errs) > before {
		return c, false
	}
	if fp, ok := cfg.(pipebench.FilePaths); ok && d.p.Dir != "" {
		fp.RelativeTo(d.p.Dir)
	}
	if v, ok := cfg.(interface{ Validate() error }); ok {
		d.report(v.Validate(), n, path)
	}
	return c, false
}

// yamlError turns a syntax error of the YAML library into a located
// problem.
func (d *decoder) yamlError(err error) {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		d.add(nil, "", "%v", err)
		return
	}
	msg := ye.GetMessage()
	line, col := 0, 0
	if tk := ye.GetToken(); tk != nil {
		line, col = tk.Position.Line, tk.Position.Column
	}
	if flowEnvRef(d.src, line) {
		msg += `: a ${VAR} inside { } must be quoted, like "${VAR:-default}", or written in block style`
	}
	d.errs = append(d.errs, Problem{File: d.file, Line: line, Column: col, Msg: msg})
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

// checkResources refuses a target or a sink using a resource (a Kafka
// topic) that the embedded system under test does not create, at its key.
func (d *decoder) checkResources(sc *Scenario, target, sink ast.Node) {
	if sc.SUT == nil {
		return
	}
	h, ok := sc.SUT.Config.(pipebench.ResourceHolder)
	if !ok {
		return
	}
	for _, c := range []struct {
		path string
		comp *Component
		node ast.Node
	}{{"target", &sc.Target, target}, {"sink", sc.Sink, sink}} {
		if c.comp == nil {
			continue
		}
		u, ok := c.comp.Config.(pipebench.ResourceUser)
		if !ok {
			continue
		}
		for _, r := range u.Uses() {
			have := h.Holds(r.Kind)
			if have == nil || slices.Contains(have, r.Name) {
				continue
			}
			n := c.node
			if pairs, ok := yamlnode.Pairs(c.node); ok {
				for _, p := range pairs {
					if yamlnode.KeyOf(p) == r.Key {
						n = p.Value
					}
				}
			}
			d.add(n, join(c.path, r.Key), "the embedded %s system under test creates no %s %q (it creates %s): add it to sut.topics, or name one of those%s",
				sc.SUT.Type, r.Kind, r.Name, strings.Join(have, ", "), pipebench.DidYouMean(r.Name, have))
		}
	}
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
