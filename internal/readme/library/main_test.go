package main

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// The program prints what README.md says it prints (testdata/output.txt,
// which README.md includes).
func TestProgramPrintsTheREADMEOutput(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	main()
	os.Stdout = stdout
	w.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/output.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the program printed\n%s\nREADME.md says (testdata/output.txt)\n%s", got, want)
	}
}
