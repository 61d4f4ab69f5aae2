package configread

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/bounded"
)

func TestSuggest(t *testing.T) {
	known := []string{"model", "workdir", "policy", "hooks", "maxTurns"}
	for word, want := range map[string]string{
		"modle": "model", "Policy": "policy", "workdri": "workdir", "hook": "hooks",
		"maxturns": "maxTurns", "zzz": "", "": "", "polcy": "policy", "hx": "",
	} {
		if got := Suggest(word, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
	if got := UnknownKey("modle", known); got != `unknown key "modle"; did you mean "model"?` {
		t.Errorf("UnknownKey: %q", got)
	}
	if got := UnknownKey("zzz", []string{"a", "b", "c"}); got != `unknown key "zzz" (want a, b or c)` {
		t.Errorf("UnknownKey: %q", got)
	}
}

type agentDoc struct {
	Model   string   `yaml:"model"`
	Workdir string   `yaml:"workdir"`
	Deny    []string `yaml:"deny"`
	Sandbox *struct {
		Bash string `yaml:"bash"`
	} `yaml:"sandbox"`
}

type serverDoc struct {
	Addr     string              `yaml:"addr"`
	Agents   map[string]agentDoc `yaml:"agents"`
	Webhooks []struct {
		URL string `yaml:"url"`
	} `yaml:"webhooks"`
}

func problems(t *testing.T, err error) []configfile.Problem {
	t.Helper()
	var ce *configfile.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T), want a *configfile.Error", err, err)
	}
	return ce.Problems
}

func TestDecodeYAMLUnknownKeys(t *testing.T) {
	src := "addr: x\nagents:\n  a:\n    modle: m\n    sandbox:\n      bsh: off\nwebhooks:\n  - url: u\n    urll: v\nadr: y\n"
	var d serverDoc
	_, err := DecodeYAML("s.yaml", []byte(src), &d, bounded.Limits{})
	ps := problems(t, err)
	want := []string{
		`s.yaml:4:5: agents.a.modle: unknown key "modle"; did you mean "model"?`,
		`s.yaml:6:7: agents.a.sandbox.bsh: unknown key "bsh"; did you mean "bash"?`,
		`s.yaml:9:5: webhooks[0].urll: unknown key "urll"; did you mean "url"?`,
		`s.yaml:10:1: adr: unknown key "adr"; did you mean "addr"?`,
	}
	if len(ps) != len(want) {
		t.Fatalf("problems: %v", ps)
	}
	for i, w := range want {
		if ps[i].Error() != w {
			t.Errorf("problem %d: %q, want %q", i, ps[i].Error(), w)
		}
	}
}

func TestDecodeYAML(t *testing.T) {
	var d serverDoc
	f, err := DecodeYAML("s.yaml", []byte("agents:\n  a:\n    model: m\n    workdir: w\n"), &d, bounded.Limits{})
	if err != nil || d.Agents["a"].Workdir != "w" {
		t.Fatalf("DecodeYAML: %v %+v", err, d)
	}
	if got := PathPos(f, "$.agents.a"); got != (Pos{3, 5}) {
		t.Errorf("PathPos of a block mapping: %v, want its first key at 3:5", got)
	}
	if got := PathPos(f, "$.agents.a.workdir"); got != (Pos{4, 14}) {
		t.Errorf("PathPos of a value: %v, want 4:14", got)
	}
	if got := PathPos(f, "$.agents.b"); got != (Pos{}) {
		t.Errorf("PathPos of nothing: %v", got)
	}
	for _, c := range []struct{ name, src, want string }{
		{"syntax", "agents: [\n", "s.yaml:1:"},
		{"type", "addr: [1]\n", "s.yaml:1:7: "},
		{"alias", "addr: &a x\nagents: *a\n", "s.yaml:2:9: YAML aliases"},
		{"deep", strings.Repeat("[", 80) + strings.Repeat("]", 80), "nested deeper than 64 levels"},
	} {
		_, err := DecodeYAML("s.yaml", []byte(c.src), &d, bounded.Limits{})
		ps := problems(t, err)
		if len(ps) != 1 || !strings.HasPrefix(ps[0].Error(), c.want) && !strings.Contains(ps[0].Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, ps, c.want)
		}
	}
}

func TestProblems(t *testing.T) {
	ps := &Problems{File: "f"}
	ps.Warn(Pos{2, 1}, "", "w")
	if ps.Failed() || ps.Err() != nil {
		t.Fatal("a warning fails the file")
	}
	ps.Add(Pos{1, 3}, "k", "e")
	ps.Sort()
	if !ps.Failed() || len(ps.List()) != 2 || ps.List()[0].Line != 1 {
		t.Fatalf("problems: %v", ps.List())
	}
	if got := ps.Err().Error(); got != "f:1:3: k: e" {
		t.Errorf("Err: %q", got)
	}
}

func TestObject(t *testing.T) {
	data := []byte("{\n  \"a\": 1,\n  \"b\": {\"c\": \"x\"}\n}")
	top, base, err := Document(data)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Object(top, base)
	if err != nil || len(ms) != 2 {
		t.Fatalf("Object: %v %v", ms, err)
	}
	if p := LineCol(data, ms[1].KeyOff); p != (Pos{3, 3}) {
		t.Errorf("key b at %v, want 3:3", p)
	}
	inner, err := Object(ms[1].Value, ms[1].ValueOff)
	if err != nil || LineCol(data, inner[0].ValueOff) != (Pos{3, 14}) {
		t.Errorf("c: %v %v", inner, err)
	}
	for src, want := range map[string]string{
		"{\"a\": 1, \"a\": 2}": "1:10 duplicate key",
		"[1]":                  "1:1 want a JSON object, got an array",
		"{\"a\": }":            "1:6 invalid JSON",
		"{\"a\": 1":            "1:8 invalid JSON: unexpected end",
	} {
		_, err := Object([]byte(src), 0)
		oe, ok := errors.AsType[*OffsetError](err)
		if !ok {
			t.Errorf("%s: %v", src, err)
			continue
		}
		p := LineCol([]byte(src), oe.Off)
		if got := strings.Join([]string{strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col), oe.Err.Error()}, " "); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q", src, got, want)
		}
	}
	if _, _, err := Document([]byte("{} x")); err == nil {
		t.Error("data after the value accepted")
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"model", "model", 0}, {"modle", "model", 2}, {"mode", "model", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

type inlineDoc struct {
	Base    `yaml:",inline"`
	Tenants []string `yaml:"tenants"`
}

type Base struct {
	Model string `yaml:"model"`
	Skip  string `yaml:"-"`
	Plain string
}

// An inline struct's keys are the document's own; a "-" field has none; a
// field without a tag is named as goccy/go-yaml names it.
func TestCheckKeysInline(t *testing.T) {
	var d inlineDoc
	_, err := DecodeYAML("i.yaml", []byte("model: m\ntenants: [a]\nplain: p\n"), &d, bounded.Limits{})
	if err != nil || d.Model != "m" || d.Plain != "p" {
		t.Fatalf("DecodeYAML: %v %+v", err, d)
	}
	_, err = DecodeYAML("i.yaml", []byte("modl: m\nskip: s\n"), &d, bounded.Limits{})
	ps := problems(t, err)
	if len(ps) != 2 || ps[0].Error() != `i.yaml:1:1: modl: unknown key "modl"; did you mean "model"?` || ps[1].Field != "skip" {
		t.Errorf("problems: %v", ps)
	}
}
