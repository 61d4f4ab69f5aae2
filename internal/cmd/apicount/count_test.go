package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A tree with one public package (two files, one of them for another
// system), and what must not count: internal/, cmd/, testdata, package
// main, test files and unexported names.
var tree = map[string]string{
	"pub/a.go": `package pub

// T is counted, with its exported method and field.
type T struct {
	Field  int
	hidden int
	Embedded
}

type Embedded struct{}

type Doer interface {
	Do() error
	undo()
	Embedded2
}

type Embedded2 interface{ Other() }

func (T) Method()  {}
func (*T) Ptr()    {}
func (T) private() {}

type t struct{ Field int }

func (t) Method() {}

func New() T      { return T{} }
func helper()     {}
func Gen[P any]() {}

const (
	A = iota
	b
)

var V, w = 1, 2
`,
	"pub/a_other.go":      "//go:build !linux\n\npackage pub\n\nfunc New2() {}\n\nconst A2 = 1\n",
	"pub/a_linux.go":      "//go:build linux\n\npackage pub\n\nfunc New2() {}\n\nconst A2 = 1\n",
	"pub/a_test.go":       "package pub\n\nfunc TestX() {}\n",
	"pub/x_test.go":       "package pub_test\n\nfunc Example() {}\n",
	"pub/internal/i/i.go": "package i\n\nfunc Hidden() {}\n",
	"internal/j/j.go":     "package j\n\nfunc Hidden() {}\n",
	"cmd/tool/lib/lib.go": "package lib\n\nfunc Hidden() {}\n",
	"pub/testdata/d.go":   "package d\n\nfunc Hidden() {}\n",
	"prog/main.go":        "package main\n\nfunc Exported() {}\n\nfunc main() {}\n",
}

func TestCountDir(t *testing.T) {
	dir := t.TempDir()
	for name, src := range tree {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := countDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for k, ids := range c {
		for id := range ids {
			got[k] = append(got[k], id)
		}
		slices.Sort(got[k])
	}
	want := map[string][]string{
		kindType:   {"pub.Doer", "pub.Embedded", "pub.Embedded2", "pub.T"},
		kindFunc:   {"pub.Gen", "pub.New", "pub.New2"},
		kindMethod: {"pub.T.Method", "pub.T.Ptr"},
		kindIface:  {"pub.Doer.Do", "pub.Doer.Embedded2", "pub.Embedded2.Other"},
		kindConst:  {"pub.A", "pub.A2"},
		kindVar:    {"pub.V"},
		kindField:  {"pub.T.Embedded", "pub.T.Field"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("counted (-want +got):\n%s", diff)
	}
	if n := c.Total(kindType, kindFunc, kindMethod, kindIface, kindConst, kindVar); n != 15 {
		t.Fatalf("total %d, want 15", n)
	}
}

func TestCountDirBadSource(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte("package bad\nfunc ("), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := countDir(dir); err == nil {
		t.Fatal("a file that does not parse was counted")
	}
}
