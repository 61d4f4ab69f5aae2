package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// Kinds of exported identifier, in the order they are reported.
const (
	kindType   = "types"
	kindFunc   = "funcs"
	kindMethod = "methods"
	kindIface  = "interface methods"
	kindConst  = "consts"
	kindVar    = "vars"
	kindField  = "fields"
)

var kinds = []string{kindType, kindFunc, kindMethod, kindIface, kindConst, kindVar, kindField}

// Count is the exported surface of a module: each identifier once, by kind,
// as "pkg.Name", "pkg.Type.Method" or "pkg.Type.Field".
type Count map[string]map[string]bool

// Total is the number of identifiers of the kinds given (every kind when
// none is given).
func (c Count) Total(only ...string) int {
	n := 0
	for k, ids := range c {
		if len(only) == 0 || slices.Contains(only, k) {
			n += len(ids)
		}
	}
	return n
}

// skipDir reports whether the directory named name, rel to the root, holds
// no public API: internal/ and cmd/ trees, test data, hidden and tool
// directories.
func skipDir(rel, name string) bool {
	if rel == "." {
		return false
	}
	if name == "internal" || name == "testdata" || name == "vendor" || name == "node_modules" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	return rel == "cmd" || strings.HasPrefix(rel, "cmd/")
}

// countDir counts the exported identifiers of the Go packages below root.
func countDir(root string) (Count, error) {
	c := Count{}
	for _, k := range kinds {
		c[k] = map[string]bool{}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("apicount: %w", err)
		}
		if f.Name.Name == "main" {
			return nil
		}
		c.addFile(filepath.ToSlash(filepath.Dir(rel)), f)
		return nil
	})
	return c, err
}

// addFile adds the exported identifiers that file f of package pkg declares.
func (c Count) addFile(pkg string, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				c[kindFunc][pkg+"."+d.Name.Name] = true
				continue
			}
			if recv := receiver(d.Recv.List[0].Type); ast.IsExported(recv) {
				c[kindMethod][pkg+"."+recv+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			c.addGen(pkg, d)
		}
	}
}

func (c Count) addGen(pkg string, d *ast.GenDecl) {
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			if !s.Name.IsExported() {
				continue
			}
			c[kindType][pkg+"."+s.Name.Name] = true
			c.addMembers(pkg+"."+s.Name.Name, s.Type)
		case *ast.ValueSpec:
			kind := kindVar
			if d.Tok == token.CONST {
				kind = kindConst
			}
			for _, n := range s.Names {
				if n.IsExported() {
					c[kind][pkg+"."+n.Name] = true
				}
			}
		}
	}
}

// addMembers adds the exported fields of a struct type and the methods of
// an interface type named typ; embedded ones count under their type's name.
func (c Count) addMembers(typ string, t ast.Expr) {
	var list *ast.FieldList
	kind := kindField
	switch t := t.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, kind = t.Methods, kindIface
	default:
		return
	}
	for _, f := range list.List {
		names := f.Names
		if len(names) == 0 {
			if name := receiver(f.Type); ast.IsExported(name) {
				c[kind][typ+"."+name] = true
			}
			continue
		}
		for _, n := range names {
			if n.IsExported() {
				c[kind][typ+"."+n.Name] = true
			}
		}
	}
}

// receiver is the name of the type a receiver or embedded field names:
// T, *T, T[P], pkg.T.
func receiver(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiver(e.X)
	case *ast.IndexExpr:
		return receiver(e.X)
	case *ast.IndexListExpr:
		return receiver(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}
