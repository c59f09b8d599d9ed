// Package docs is pipebench's documentation (this folder's pages, the
// README and ARCHITECTURE.md) read as data, for the tests that hold it to
// the code: its code blocks, inline code, links and headings' anchors.
// Its own tests check the links and the plug-in pages and follow the
// plug-in recipe; cmd/pipebench's check the commands, flags, files and
// scenarios the pages name.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Page is one markdown file of the documentation.
type Page struct {
	// Name is the file's path from the repository's root, with slashes
	// (README.md, docs/kafka.md).
	Name string
	// Blocks are its fenced code blocks.
	Blocks []Block
	// Prose are its lines outside code blocks.
	Prose []Line
	// Anchors are its headings' anchors, as GitHub makes them.
	Anchors map[string]bool
}

// Block is a fenced code block.
type Block struct {
	// Lang is the fence's info string: sh, yaml, go, text, or "".
	Lang string
	// Text is the block's content, without the fences.
	Text string
	// Line is the line of the content's first line.
	Line int
}

// Line is a line of a page and its number (from 1).
type Line struct {
	Text string
	Line int
}

// Where names a line of the page for a message: docs/kafka.md:12.
func (p *Page) Where(line int) string { return p.Name + ":" + strconv.Itoa(line) }

// Read reads the documentation of the repository whose root is root:
// README.md, ARCHITECTURE.md and every docs/*.md.
func Read(root string) ([]*Page, error) {
	names := []string{"README.md", "ARCHITECTURE.md"}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, p := range pages {
		names = append(names, "docs/"+filepath.Base(p))
	}
	var out []*Page
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(n)))
		if err != nil {
			return nil, err
		}
		out = append(out, Parse(n, string(data)))
	}
	return out, nil
}

// Parse cuts a markdown file into fenced code blocks and prose, and
// collects its headings' anchors.
func Parse(name, text string) *Page {
	p := &Page{Name: name, Anchors: map[string]bool{}}
	seen := map[string]int{}
	var block *Block
	var body []string
	for i, l := range strings.Split(text, "\n") {
		n := i + 1
		if fence, ok := strings.CutPrefix(strings.TrimSpace(l), "```"); ok {
			if block == nil {
				block = &Block{Lang: strings.TrimSpace(fence), Line: n + 1}
				body = nil
			} else {
				block.Text = strings.Join(body, "\n")
				p.Blocks = append(p.Blocks, *block)
				block = nil
			}
			continue
		}
		if block != nil {
			body = append(body, l)
			continue
		}
		p.Prose = append(p.Prose, Line{l, n})
		if h, ok := strings.CutPrefix(l, "#"); ok {
			a := Anchor(strings.TrimLeft(h, "#"))
			if k := seen[a]; k > 0 {
				p.Anchors[a+"-"+strconv.Itoa(k)] = true
			} else {
				p.Anchors[a] = true
			}
			seen[a]++
		}
	}
	return p
}

var (
	link     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]*)\)`)
	codeSpan = regexp.MustCompile("`+[^`]+`+")
)

// Anchor is the anchor GitHub gives a heading: lower case, every
// character but letters, digits, spaces, hyphens and underscores dropped,
// spaces made hyphens; a link's text stays, its target goes.
func Anchor(heading string) string {
	heading = link.ReplaceAllStringFunc(heading, func(m string) string { return m[1:strings.Index(m, "](")] })
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Spans returns the inline code of a prose line, a table's escaped pipes
// (`\|`) read as pipes.
func Spans(line string) []string {
	var out []string
	for _, m := range codeSpan.FindAllString(line, -1) {
		out = append(out, strings.ReplaceAll(strings.Trim(m, "`"), `\|`, "|"))
	}
	return out
}

// Links returns the targets of a prose line's links, outside its inline
// code.
func Links(line string) []string {
	var out []string
	for _, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "``"), -1) {
		out = append(out, m[1])
	}
	return out
}

// Row returns the cells of a table row (| a | b | c |), trimmed, or nil
// for a line that is not one. An escaped pipe (\|) stays in its cell.
func Row(line string) []string {
	if !strings.HasPrefix(line, "|") {
		return nil
	}
	var cells []string
	var cell strings.Builder
	body := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "|"), "|")
	for i := 0; i < len(body); i++ {
		switch {
		case body[i] == '\\' && i+1 < len(body) && body[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case body[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(body[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}
