package docs

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// root is the repository's root, from this folder.
const root = ".."

func pages(t *testing.T) []*Page {
	t.Helper()
	ps, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestLinksResolve: every relative link of the documentation names a file
// or folder of the repository, and its #anchor a heading there; every
// page of docs/ is linked from the README.
func TestLinksResolve(t *testing.T) {
	ps := pages(t)
	byName := map[string]*Page{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	n := 0
	for _, p := range ps {
		for _, l := range p.Prose {
			for _, target := range Links(l.Text) {
				if target == "" {
					t.Errorf("%s: a link without a target", p.Where(l.Line))
					continue
				}
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				file, frag, _ := strings.Cut(target, "#")
				dest := p.Name
				if file != "" {
					dest = path.Clean(path.Join(path.Dir(p.Name), file))
					if strings.HasPrefix(dest, "../") || path.IsAbs(file) {
						t.Errorf("%s: link %q leaves the repository", p.Where(l.Line), target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
						t.Errorf("%s: link %q: no file %s", p.Where(l.Line), target, dest)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if q := byName[dest]; q == nil {
					t.Errorf("%s: link %q: an anchor in %s, which is not a page of the documentation", p.Where(l.Line), target, dest)
				} else if !q.Anchors[frag] {
					t.Errorf("%s: link %q: %s has no heading #%s", p.Where(l.Line), target, dest, frag)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d relative links found: is the parser broken?", n)
	}
	t.Logf("%d relative links of %d pages resolve", n, len(ps))
	linked := map[string]bool{}
	for _, l := range byName["README.md"].Prose {
		for _, target := range Links(l.Text) {
			file, _, _ := strings.Cut(target, "#")
			linked[path.Clean(file)] = true
		}
	}
	for _, p := range ps {
		if strings.HasPrefix(p.Name, "docs/") && !linked[p.Name] {
			t.Errorf("README.md does not link to %s", p.Name)
		}
	}
}

// plugins returns every plug-in's name by kind (generator, driver, sink,
// sut, observer) as the committed scenario schema offers them, which
// `go test ./schema` holds to the registry: what a scenario can name.
func plugins(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "schema", "scenario.json"))
	if err != nil {
		t.Fatal(err)
	}
	type branch struct {
		If struct {
			Properties map[string]struct {
				Const string `json:"const"`
			} `json:"properties"`
		} `json:"if"`
	}
	type section struct {
		AllOf []branch `json:"allOf"`
		Items struct {
			AllOf []branch `json:"allOf"`
		} `json:"items"`
	}
	var s struct {
		Properties map[string]section `json:"properties"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for kind, at := range map[string][2]string{
		"generator": {"workload", "generator"}, "driver": {"target", "driver"}, "sink": {"sink", "type"},
		"sut": {"sut", "type"}, "observer": {"observers", "type"},
	} {
		sec := s.Properties[at[0]]
		branches := append(sec.AllOf, sec.Items.AllOf...)
		for _, b := range branches {
			if name := b.If.Properties[at[1]].Const; name != "" {
				out[kind] = append(out[kind], name)
			}
		}
		if len(out[kind]) == 0 {
			t.Fatalf("schema/scenario.json offers no %s: has its shape changed?", kind)
		}
		sort.Strings(out[kind])
	}
	return out
}

// tableRows returns a page's table rows of plug-ins (| kind | `name`,
// `name2` | third |) by "kind name": the third cell.
func tableRows(p *Page) map[string][]string {
	out := map[string][]string{}
	for _, l := range p.Prose {
		cells := Row(l.Text)
		if len(cells) < 3 {
			continue
		}
		for _, name := range Spans(cells[1]) {
			out[cells[0]+" "+name] = append(out[cells[0]+" "+name], cells[2])
		}
	}
	return out
}

// linkOnly reports whether a cell is one link and nothing else: an index
// row's, not a row of settings.
func linkOnly(cell string) bool {
	ls := Links(cell)
	return len(ls) == 1 && strings.HasPrefix(cell, "[") && strings.HasSuffix(cell, "("+ls[0]+")")
}

// TestEveryPluginHasARow: the plug-in index of docs/scenario.md names
// every plug-in a scenario can name, linked to the page whose table has a
// row of its settings, and that page has the row.
func TestEveryPluginHasARow(t *testing.T) {
	byName := map[string]*Page{}
	for _, p := range pages(t) {
		byName[p.Name] = p
	}
	index := tableRows(byName["docs/scenario.md"])
	for kind, names := range plugins(t) {
		for _, name := range names {
			var target string
			for _, cell := range index[kind+" "+name] {
				if linkOnly(cell) {
					target = Links(cell)[0]
				}
			}
			if target == "" {
				t.Errorf("the plug-in index of docs/scenario.md has no row linking the %s %s to its page: add one (| %s | `%s` | [PAGE](PAGE.md) |)", kind, name, kind, name)
				continue
			}
			page := "docs/scenario.md"
			if file, _, _ := strings.Cut(target, "#"); file != "" {
				page = path.Join("docs", file)
			}
			p := byName[page]
			if p == nil {
				t.Errorf("docs/scenario.md links the %s %s to %s, not a page of docs/", kind, name, target)
				continue
			}
			ok := false
			for _, cell := range tableRows(p)[kind+" "+name] {
				ok = ok || !linkOnly(cell) && cell != ""
			}
			if !ok {
				t.Errorf("%s has no row of the %s %s's settings (| %s | `%s` | settings |)", page, kind, name, kind, name)
			}
		}
	}
}
