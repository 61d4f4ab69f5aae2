package configread

import (
	"errors"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/tollgate-dev/tollgate/internal/bounded"
)

// ParseYAML parses src, a document named file that [bounded.CheckYAML]
// passed, into its syntax tree with goccy/go-yaml's parser, mode and opts.
// A syntax error is a *configfile.Error with the error's position; a
// panic of the parser (third-party code) is one too, instead of a crash of
// the host.
func ParseYAML(file string, src []byte, mode parser.Mode, opts ...parser.Option) (f *ast.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, Errorf(file, Pos{}, "", "the YAML parser failed on this document (%v)", p)
		}
	}()
	f, err = parser.ParseBytes(src, mode, opts...)
	if err != nil {
		return nil, yamlError(file, err)
	}
	return f, nil
}

// yamlError turns an error of goccy/go-yaml into a *configfile.Error at
// the error's token.
func yamlError(file string, err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return Errorf(file, Pos{}, "", "%v", err)
	}
	return Errorf(file, TokenPos(ye.GetToken()), "", "%s", ye.GetMessage())
}

// DecodeYAML reads src, a YAML document named file, into v (a pointer to
// a struct, a map or a slice whose yaml tags name the keys): it checks
// src against lim ([bounded.CheckYAML]: size, depth, no aliases), parses
// it, refuses every key v has no field for ([CheckKeys], with the key
// probably meant), and decodes it. Every problem is a *configfile.Error;
// the syntax tree is returned for the positions of later problems
// ([PathPos]).
func DecodeYAML(file string, src []byte, v any, lim bounded.Limits) (*ast.File, error) {
	if err := bounded.CheckYAML(file, src, lim); err != nil {
		return nil, asError(err)
	}
	f, err := ParseYAML(file, src, 0)
	if err != nil {
		return nil, err
	}
	ps := &Problems{File: file}
	ps.Append(CheckKeys(file, f, v)...)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	if err := bounded.UnmarshalYAML(src, v, yaml.DisallowUnknownField()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			return nil, yamlError(file, err)
		}
		return nil, Errorf(file, Pos{}, "", "%v", err)
	}
	return f, nil
}

// asError returns a limit's *configfile.Problem (package bounded's) as a
// *configfile.Error of one problem; other errors as they are.
func asError(err error) error {
	if be, ok := errors.AsType[*bounded.Error](err); ok {
		return Errorf(be.File, Pos{be.Line, be.Col}, be.Field, "%s", be.Message)
	}
	return err
}

// TokenPos returns where tk is, or the zero Pos.
func TokenPos(tk *token.Token) Pos {
	if tk == nil || tk.Position == nil {
		return Pos{}
	}
	return Pos{tk.Position.Line, tk.Position.Column}
}

// NodePos returns where n starts: for a block mapping its first key (the
// mapping's own token is its first ':'), for a key-value pair its key, for
// an anchor or a tag the & or !. nil is the zero Pos.
func NodePos(n ast.Node) Pos {
	switch x := n.(type) {
	case nil:
		return Pos{}
	case *ast.MappingNode:
		if !x.IsFlowStyle && len(x.Values) > 0 {
			return NodePos(x.Values[0])
		}
	case *ast.MappingValueNode:
		if x.Key != nil {
			return NodePos(x.Key)
		}
	case *ast.AnchorNode:
		return TokenPos(x.Start)
	case *ast.TagNode:
		return TokenPos(x.Start)
	}
	return TokenPos(n.GetToken())
}

// PathPos returns where the node at path ("$.agents.payer.model",
// "$.webhooks[0]", goccy/go-yaml's path syntax) starts in f ([NodePos]),
// or the zero Pos when f has no such node.
func PathPos(f *ast.File, path string) (pos Pos) {
	defer func() {
		if recover() != nil { // the YAML library's; a position is not worth a crash
			pos = Pos{}
		}
	}()
	if f == nil {
		return Pos{}
	}
	p, err := yaml.PathString(path)
	if err != nil {
		return Pos{}
	}
	n, err := p.FilterFile(f)
	if err != nil || n == nil {
		return Pos{}
	}
	return NodePos(n)
}

// Body returns the first document of f that holds more than comments, and
// the bodies of any later ones (which a one-document format refuses or
// ignores). nil when there is none.
func Body(f *ast.File) (body ast.Node, more []ast.Node) {
	for _, d := range f.Docs {
		if d == nil || d.Body == nil || IsComment(d.Body) {
			continue
		}
		if body == nil {
			body = d.Body
		} else {
			more = append(more, d.Body)
		}
	}
	return body, more
}

// IsComment reports whether n is a comment only.
func IsComment(n ast.Node) bool {
	switch n.(type) {
	case *ast.CommentNode, *ast.CommentGroupNode:
		return true
	}
	return false
}

// Unwrap returns the value under n's anchors and tags.
func Unwrap(n ast.Node) ast.Node {
	for range 8 {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.TagNode:
			n = x.Value
		default:
			return n
		}
	}
	return n
}

// IsNull reports whether n is absent or null.
func IsNull(n ast.Node) bool {
	if n == nil {
		return true
	}
	_, ok := Unwrap(n).(*ast.NullNode)
	return ok
}

// Text returns the text of a string scalar (plain, quoted or block).
func Text(n ast.Node) (string, bool) {
	switch x := Unwrap(n).(type) {
	case *ast.StringNode:
		return x.Value, true
	case *ast.LiteralNode:
		if x.Value == nil {
			return "", true
		}
		return x.Value.Value, true
	}
	return "", false
}

// ScalarText is [Text] that also takes numbers and booleans as written.
func ScalarText(n ast.Node) (string, bool) {
	if s, ok := Text(n); ok {
		return s, true
	}
	switch x := Unwrap(n).(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		if tk := x.GetToken(); tk != nil {
			return tk.Value, true
		}
	}
	return "", false
}

// Key returns the text of a mapping entry's key, as written.
func Key(mv *ast.MappingValueNode) string {
	var k ast.Node = mv.Key
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = mk.Value
	}
	if k == nil {
		return ""
	}
	if s, ok := Text(k); ok {
		return s
	}
	if tk := k.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

// Kind names n's type for messages: "a mapping", "a list", "a string", "a
// number", "a boolean", "null", "an alias"; with json, "an object" and
// "an array" for the first two.
func Kind(n ast.Node, json bool) string {
	switch Unwrap(n).(type) {
	case nil, *ast.NullNode:
		return "null"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.MappingNode, *ast.MappingValueNode:
		if json {
			return "an object"
		}
		return "a mapping"
	case *ast.SequenceNode:
		if json {
			return "an array"
		}
		return "a list"
	case *ast.AliasNode:
		return "an alias"
	}
	return "a " + strings.ToLower(Unwrap(n).Type().String())
}

// Entries returns the entries of a mapping node (a lone key-value pair is
// a mapping of one), or false for any other node.
func Entries(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch x := Unwrap(n).(type) {
	case *ast.MappingNode:
		return x.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{x}, true
	}
	return nil, false
}

// ReadFile reads the regular file at path within lim's size
// ([bounded.ReadFile]); a file past the limit, or not a regular file, is a
// *configfile.Error. Errors of the file system are returned as they are
// (they wrap fs.ErrNotExist, ...).
func ReadFile(path string, lim bounded.Limits) ([]byte, error) {
	src, err := bounded.ReadFile(path, lim)
	return src, asError(err)
}
