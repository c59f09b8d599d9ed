package kpi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The fence between kpi and the adapters: kpi computes from the KPI names
// every plug-in shares, and a plug-in that knows series of its own reads
// them itself (pipebench.Detector). These tests read the source.

const module = "github.com/pipebench/pipebench"

// adapterRoots hold the adapters, one folder each under them.
var adapterRoots = []string{"driver", "sink", "observer", "sut", "producer"}

// sharedNames are the KPI names of the design (its list of KPI names and
// the meanings beside it, with where it says them) that kpi reads
// although one adapter alone produces them today: every pipeline's
// vocabulary, which that adapter happens to be the only one to report so
// far (a name read with a suffix, backlog.max, is listed as its series).
// Keep it short: a name only one observer or system has belongs to that
// plug-in's Detector.
var sharedNames = map[string]string{
	"receiver_accepted_rate": "pipeline",
	"receiver_refused_rate":  "pipeline",
	"exporter_sent_rate":     "pipeline",
	"exporter_failed_rate":   "pipeline",
	"exporter_queue_size":    "pipeline (max, last)",
	"memory_mb":              "pipeline (per instance)",
	"cpu_cores":              "pipeline (per instance)",
	"backlog":                "derived (series, and .max per phase)",
	"handled_rate":           "meanings: a rate named after a stage counts what that stage finished (a proxy's handled rate)",
}

// derivedSuffixes are what kpi's Deriver and Build append to an observed
// series' name (a counter's rate and total, a gauge's peak).
var derivedSuffixes = []string{"_rate", ".total", ".max", ".max_at", ".last", ".mean", ".count", ".sum", "_bucket"}

// root is the module's folder (kpi's parent).
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod above kpi: %v", err)
	}
	return dir
}

// parseDir parses the Go files of one package folder, without its tests.
func parseDir(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// moduleImports are the module's own packages files import, as folders
// relative to the module.
func moduleImports(files []*ast.File) []string {
	var out []string
	for _, f := range files {
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rel, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	return out
}

func isAdapter(rel string) bool {
	top, _, _ := strings.Cut(rel, "/")
	return slices.Contains(adapterRoots, top)
}

// kpi imports no adapter, directly or through another of the module's
// packages.
func TestKPIImportsNoAdapter(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	seen := map[string]string{"kpi": ""}
	queue := []string{"kpi"}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, im := range moduleImports(parseDir(t, fset, filepath.Join(dir, pkg))) {
			if _, ok := seen[im]; ok {
				continue
			}
			seen[im] = pkg
			if isAdapter(im) {
				t.Errorf("kpi imports the adapter %s (through %s): a plug-in's own reading of its series is its Detector", im, pkg)
				continue
			}
			queue = append(queue, im)
		}
	}
}

// seriesNames are the series names the package's files give the points
// they make: a literal (or a constant of the package) as a Point's Name,
// as a mapping's KPI (an observer's table of metric to series), or as the
// first argument of a function of the package that makes a Point named
// by its first parameter (the observers' add and point helpers).
func seriesNames(files []*ast.File) []string {
	consts := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringOf(vs.Values[i], nil); ok {
							consts[n.Name] = s
						}
					}
				}
			}
		}
	}
	// makesPoint says whether body makes a Point whose Name is param.
	makesPoint := func(body ast.Node, param string) bool {
		found := false
		ast.Inspect(body, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
					if v, ok := kv.Value.(*ast.Ident); ok && v.Name == param {
						found = true
					}
				}
			}
			return !found
		})
		return found
	}
	firstParam := func(ft *ast.FuncType) string {
		if ft.Params == nil || len(ft.Params.List) == 0 || len(ft.Params.List[0].Names) == 0 {
			return ""
		}
		return ft.Params.List[0].Names[0].Name
	}
	// emitters are the functions and closures that name a Point by their
	// first parameter, or hand it on first to one that does.
	emitters := map[string]bool{}
	passes := func(body ast.Node, param string) bool {
		found := false
		ast.Inspect(body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && len(c.Args) > 0 {
				if f, ok := c.Fun.(*ast.Ident); ok && emitters[f.Name] {
					if a, ok := c.Args[0].(*ast.Ident); ok && a.Name == param {
						found = true
					}
				}
			}
			return !found
		})
		return found
	}
	for grew := true; grew; {
		grew = false
		mark := func(name string, ft *ast.FuncType, body ast.Node) {
			if p := firstParam(ft); p != "" && body != nil && !emitters[name] && (makesPoint(body, p) || passes(body, p)) {
				emitters[name], grew = true, true
			}
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.FuncDecl:
					if x.Body != nil {
						mark(x.Name.Name, x.Type, x.Body)
					}
				case *ast.AssignStmt:
					for i, rhs := range x.Rhs {
						if fl, ok := rhs.(*ast.FuncLit); ok && i < len(x.Lhs) {
							if id, ok := x.Lhs[i].(*ast.Ident); ok {
								mark(id.Name, fl.Type, fl.Body)
							}
						}
					}
				}
				return true
			})
		}
	}
	var out []string
	add := func(e ast.Expr) {
		if s, ok := stringOf(e, consts); ok && s != "" {
			out = append(out, s)
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := x.Key.(*ast.Ident); ok && (k.Name == "Name" || k.Name == "KPI") {
					add(x.Value)
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && emitters[id.Name] && len(x.Args) > 0 {
					add(x.Args[0])
				}
			}
			return true
		})
	}
	return out
}

// stringOf is e's value when it is a string literal or one of consts.
func stringOf(e ast.Expr, consts map[string]string) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[x.Name]
		return s, ok
	}
	return "", false
}

// adapterSeries maps each series name an adapter's code gives its points
// to the adapters that do (an adapter's shared helpers under internal/,
// such as the effect observers' histogram, count as its own).
func adapterSeries(t *testing.T) map[string][]string {
	dir := root(t)
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, top := range adapterRoots {
		entries, err := os.ReadDir(filepath.Join(dir, top))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			// observer/internal holds helpers the observers share: it
			// counts as the code of each adapter that imports it.
			if !e.IsDir() || e.Name() == "internal" {
				continue
			}
			adapter := top + "/" + e.Name()
			var pkgs []string
			filepath.WalkDir(filepath.Join(dir, adapter), func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					if d.Name() == "testdata" {
						return filepath.SkipDir
					}
					rel, _ := filepath.Rel(dir, p)
					pkgs = append(pkgs, filepath.ToSlash(rel))
				}
				return nil
			})
			seen := map[string]bool{}
			for len(pkgs) > 0 {
				pkg := pkgs[0]
				pkgs = pkgs[1:]
				if seen[pkg] {
					continue
				}
				seen[pkg] = true
				files := parseDir(t, fset, filepath.Join(dir, pkg))
				for _, n := range seriesNames(files) {
					if !slices.Contains(out[n], adapter) {
						out[n] = append(out[n], adapter)
					}
				}
				for _, im := range moduleImports(files) {
					if strings.HasPrefix(im, "internal/") || strings.Contains(im, "/internal/") {
						pkgs = append(pkgs, im)
					}
				}
			}
		}
	}
	return out
}

// literal is a string literal of kpi's code and where it is.
type literal struct {
	value, where string
}

func kpiLiterals(t *testing.T) []literal {
	fset := token.NewFileSet()
	var out []literal
	for _, f := range parseDir(t, fset, filepath.Join(root(t), "kpi")) {
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.ImportSpec); ok {
				return false
			}
			if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING {
				if s, err := strconv.Unquote(b.Value); err == nil {
					p := fset.Position(b.Pos())
					out = append(out, literal{s, filepath.Base(p.Filename) + ":" + strconv.Itoa(p.Line)})
				}
			}
			return true
		})
	}
	return out
}

// bases are the series names a KPI name may be read from: itself, and
// without a suffix the Deriver or Build adds.
func bases(name string) []string {
	out := []string{name}
	for _, s := range derivedSuffixes {
		if b, ok := strings.CutSuffix(name, s); ok && b != "" {
			out = append(out, b)
		}
	}
	return out
}

// No string in kpi's code names a series one adapter alone produces (what
// the adapters' code names its points, read from it), other than the
// design's shared KPI names in sharedNames; and every name there is
// still one kpi reads and one adapter alone produces.
func TestKPINamesNoAdapterSeries(t *testing.T) {
	series := adapterSeries(t)
	// The reading of the adapters' code finds what they are known to
	// produce: a scan that found nothing would let anything through.
	for name, adapter := range map[string]string{"node_storage_used_ratio": "observer/nats", "consumer_paused": "observer/nats",
		"handled": "observer/prometheus", "effect_backlog": "observer/effect", "effects": "observer/effect-kube",
		"memory_rss_bytes": "observer/process", "consumer_committed_offset": "observer/kafka", "producer_lines_written": "producer/logfile"} {
		if !slices.Contains(series[name], adapter) {
			t.Errorf("the scan of the adapters' code did not find that %s produces %s (found %v)", adapter, name, series[name])
		}
	}
	used := map[string]bool{}
	var bad []string
	for _, l := range kpiLiterals(t) {
		shared := ""
		for _, b := range bases(l.value) {
			if _, ok := sharedNames[b]; ok {
				shared = b
			}
		}
		for _, b := range bases(l.value) {
			by := series[b]
			if len(by) != 1 {
				continue
			}
			if shared != "" {
				used[shared] = true
				continue
			}
			bad = append(bad, l.where+": "+strconv.Quote(l.value)+" is a series only "+by[0]+" produces ("+b+")")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b + ": read it in that plug-in's Detector (pipebench.Detector), or, if it is a KPI name of the design every pipeline shares, add it to sharedNames")
	}
	for name := range sharedNames {
		if !used[name] {
			t.Errorf("sharedNames lists %q, which kpi does not read or no single adapter produces: drop it", name)
		}
	}
}
