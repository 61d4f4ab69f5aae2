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
// as goccy/go-yaml names them (yaml tag, else json tag, else the name in
// lower case), an inline struct's fields with its own; maps take any key
// and check their values; lists check their elements. Values of another
// shape than v's are left to the decoder.
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

// structKeys maps the keys of a struct type to their fields' types; the
// keys of an inline struct field (`yaml:",inline"`) are its own.
func structKeys(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range keyFields(t) {
		name, _ := yamlName(f)
		out[name] = f.Type
	}
	return out
}

// sortedKeys lists the keys of a struct type in the order of its fields.
func sortedKeys(t reflect.Type) []string {
	var out []string
	for _, f := range keyFields(t) {
		name, _ := yamlName(f)
		out = append(out, name)
	}
	return out
}

// keyFields lists the fields of a struct type that a key names, those of
// its inline struct fields in their place.
func keyFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		_, opts, _ := strings.Cut(fieldTag(f), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if strings.Contains(","+opts+",", ",inline,") && ft.Kind() == reflect.Struct {
			out = append(out, keyFields(ft)...)
			continue
		}
		if _, ok := yamlName(f); ok {
			out = append(out, f)
		}
	}
	return out
}

// yamlName is a field's key as goccy/go-yaml reads it: the name of its
// yaml tag, else of its json tag, else its name in lower case; false for
// "-".
func yamlName(f reflect.StructField) (string, bool) {
	name, _, _ := strings.Cut(fieldTag(f), ",")
	switch name {
	case "-":
		return "", false
	case "":
		return strings.ToLower(f.Name), true
	}
	return name, true
}

// fieldTag is the tag goccy/go-yaml reads: yaml, else json.
func fieldTag(f reflect.StructField) string {
	if t := f.Tag.Get("yaml"); t != "" {
		return t
	}
	return f.Tag.Get("json")
}
