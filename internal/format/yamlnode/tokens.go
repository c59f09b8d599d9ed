package yamlnode

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// MaxDepth is the deepest nesting of mappings and lists a file pipebench
// reads as YAML may have (a scenario needs about six levels, a suite
// four, a pod patch a dozen). The YAML library's parser needs time and
// memory that grow much faster than the input for deeply nested text
// (200 KB of '[' took 45 s and 15 GB; 64 KB of a suite's nesting 19 s and
// 1.5 GB): every YAML decoder checks the tokens first.
const MaxDepth = 64

// Tokens splits text into YAML tokens (a linear pass) and checks them
// before any parser runs: nesting deeper than MaxDepth, and anchors
// (&name) and aliases (*name), which none of pipebench's files take (an
// alias would let a small file expand into a huge one: "billion laughs").
// what names the kind of file in the message ("scenario"). On a problem it
// returns nil and the problem, at the token that broke the rule.
func Tokens(file, what, text string) (token.Tokens, *Problem) {
	// A byte order mark is not part of the YAML text.
	tks := lexer.Tokenize(strings.TrimPrefix(text, "\uFEFF"))
	at := func(tk *token.Token, format string, args ...any) *Problem {
		return &Problem{File: file, Line: tk.Position.Line, Column: tk.Position.Column, Msg: fmt.Sprintf(format, args...)}
	}
	flow := 0
	var block []int // columns of the open block collections
	for i, tk := range tks {
		switch tk.Type {
		case token.AnchorType, token.AliasType:
			kind, sign := "anchor", "&"
			if tk.Type == token.AliasType {
				kind, sign = "alias", "*"
			}
			name := ""
			if i+1 < len(tks) {
				name = tks[i+1].Value
			}
			return nil, at(tk, "YAML %s %s%s is not supported: write the value out in full (anchors and aliases are refused so that a small file cannot expand into a huge one)", kind, sign, name)
		case token.DocumentHeaderType:
			flow, block = 0, block[:0]
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			if flow > 0 {
				flow--
			}
		case token.SequenceEntryType, token.MappingValueType, token.MappingKeyType:
			if flow > 0 {
				break
			}
			col := tk.Position.Column
			if tk.Type == token.MappingValueType && i > 0 {
				col = tks[i-1].Position.Column // the key's column
			}
			for len(block) > 0 && block[len(block)-1] > col {
				block = block[:len(block)-1]
			}
			if len(block) == 0 || block[len(block)-1] < col {
				block = append(block, col)
			}
		}
		if flow+len(block) > MaxDepth {
			return nil, at(tk, "the file nests more than %d levels deep; a %s needs far fewer: check the brackets and the indentation", MaxDepth, what)
		}
	}
	return tks, nil
}
