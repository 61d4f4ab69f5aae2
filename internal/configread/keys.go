package configread

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/tollgate-dev/tollgate/configfile"
)

// CheckKeys returns a problem for every key of the document f that v (a
// pointer to what the document decodes into) has no field for, at the
// key, with the key probably meant ([UnknownKey]). Struct fields are named
// by their yaml tags (the field's name, first letter lower-cased, without
// one); maps take any key and check their values; lists check their
// elements. Values of another shape than v's are left to the decoder.
func CheckKeys(file string, f *ast.File, v any) []configfile.Problem {
	body, _ := Body(f)
	if body == nil {
		return nil
	}
	c := &keyChecker{ps: Problems{File: file}}
	c.walk(body, reflect.TypeOf(v), "")
	return c.ps.List()
}

type keyChecker struct {
	ps    Problems
	depth int
}

func (c *keyChecker) walk(n ast.Node, t reflect.Type, field string) {
	if t == nil || c.depth > 128 {
		return
	}
	c.depth++
	defer func() { c.depth-- }()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		entries, ok := Entries(n)
		if !ok {
			return
		}
		fields := structKeys(t)
		for _, mv := range entries {
			k := Key(mv)
			ft, known := fields[k]
			if !known {
				c.ps.Add(NodePos(mv), join(field, k), "%s", UnknownKey(k, sortedKeys(t)))
				continue
			}
			c.walk(mv.Value, ft, join(field, k))
		}
	case reflect.Map:
		entries, _ := Entries(n)
		for _, mv := range entries {
			c.walk(mv.Value, t.Elem(), join(field, Key(mv)))
		}
	case reflect.Slice, reflect.Array:
		if seq, ok := Unwrap(n).(*ast.SequenceNode); ok {
			for i, el := range seq.Values {
				c.walk(el, t.Elem(), fmt.Sprintf("%s[%d]", field, i))
			}
		}
	}
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// structKeys maps the keys of a struct type to their fields' types.
func structKeys(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if name, ok := yamlName(f); ok {
			out[name] = f.Type
		}
	}
	return out
}

// sortedKeys lists the keys of a struct type in the order of its fields.
func sortedKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() {
			if name, ok := yamlName(f); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

// yamlName is a field's key: its yaml tag's name, or its name with the
// first letter lower-cased (goccy/go-yaml's default); false for "-".
func yamlName(f reflect.StructField) (string, bool) {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	switch name {
	case "-":
		return "", false
	case "":
		return strings.ToLower(f.Name[:1]) + f.Name[1:], true
	}
	return name, true
}
