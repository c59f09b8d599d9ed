// Package yamlnode holds what the strict YAML decoders (scenario/, suite/)
// share: a problem located by file, line, column and YAML path, the
// rendering of a list of them, and the small questions asked of a syntax
// tree node (where it is, what kind it is, its scalar text).
package yamlnode

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Problem is one thing wrong in a file, with where it is.
type Problem struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int
	Path   string // YAML path: phases[1].rate
	Msg    string
}

// String prints the problem as file:line:col: path: message.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// At returns a Problem located at node n (line and column 0 when n has no
// position).
func At(file string, n ast.Node, path, msg string) Problem {
	line, col := Pos(n)
	return Problem{File: file, Line: line, Column: col, Path: path, Msg: msg}
}

// Sort orders problems as they stand in the file.
func Sort(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		return ps[i].Column < ps[j].Column
	})
}

// Format prints a heading naming what was decoded ("scenario", "suite")
// and one problem per line.
func Format(what string, ps []Problem) string {
	var b strings.Builder
	file := ""
	if len(ps) > 0 {
		file = ps[0].File
	}
	s := "s"
	if len(ps) == 1 {
		s = ""
	}
	fmt.Fprintf(&b, "%s %s is not valid (%d problem%s):", what, file, len(ps), s)
	for _, p := range ps {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// Pos returns the line and column of n, or 0, 0.
func Pos(n ast.Node) (int, int) {
	if n == nil || reflect.ValueOf(n).IsNil() || n.GetToken() == nil {
		return 0, 0
	}
	p := n.GetToken().Position
	return p.Line, p.Column
}

// KindOf names what a node is, for "expected X, got Y" messages.
func KindOf(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode, nil:
		return "nothing"
	case *ast.IntegerNode, *ast.FloatNode:
		return "a number"
	case *ast.BoolNode:
		return "true/false"
	default:
		return "a string"
	}
}

// Unwrap looks through anchors, tags and comments.
func Unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.CommentGroupNode:
			return nil
		default:
			return n
		}
	}
}

// Scalar returns the text of a scalar node, and false when n is no
// scalar.
func Scalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	}
	return "", false
}

// Contains reports whether list holds s.
func Contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Pairs returns the key: value pairs of a mapping node (a single pair is a
// mapping too), and false when n is no mapping.
func Pairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch v := n.(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	}
	return nil, false
}

// KeyOf is a pair's key as written (a quoted key without its quotes).
func KeyOf(p *ast.MappingValueNode) string {
	if k, ok := p.Key.(*ast.StringNode); ok {
		return k.Value
	}
	return strings.TrimSpace(p.Key.String())
}
