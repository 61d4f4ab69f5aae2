package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// slowDigest is Digest without the canonical fast path.
func slowDigest(args json.RawMessage) string {
	b := []byte(args)
	var v any
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if err := d.Decode(&v); err == nil && !d.More() {
		if c, err := json.Marshal(v); err == nil {
			b = c
		}
	}
	if len(args) == 0 {
		b = []byte("{}")
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

var canonicalSeeds = []string{
	`{"city":"Paris"}`, `{"a":2,"b":2}`, `{}`, `[]`, `null`, `true`, `-0.5e+10`, `"x"`,
	`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{ "a":1}`, `{"a":"<b>"}`, `{"a":"\u00e9"}`, `{"a":"é"}`,
	`{"a":"\n"}`, `{"a":[1,{"c":null,"b":false}]}`, `01`, `1.`, `{"a":1}}`, `{"a":1} `, "\"\u2028\"",
	`{"":0,"a":{"":[]}}`, `[1,2,]`, `"\xff"`, `{"a":1}{"b":2}`, `12345678901234567890`, `1E5`, `-`,
}

// The fast path never changes a digest: it answers for input that the long
// way would give back unchanged, and only for that.
func TestCanonicalMatchesTheLongWay(t *testing.T) {
	fast := 0
	for _, s := range canonicalSeeds {
		if got, want := Digest(json.RawMessage(s)), slowDigest(json.RawMessage(s)); got != want {
			t.Errorf("Digest(%s) = %s, the long way %s", s, got, want)
		}
		if canonical([]byte(s)) {
			fast++
		}
	}
	if fast < 8 {
		t.Errorf("only %d seeds take the fast path", fast)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Digest(b), slowDigest(b); got != want {
			t.Errorf("Digest(%q) = %s, the long way %s", b, got, want)
		}
		if canonical(b) {
			var v any
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				t.Fatalf("canonical(%q) but it does not decode: %v", b, err)
			}
			if c, _ := json.Marshal(v); !bytes.Equal(c, b) {
				t.Errorf("canonical(%q) but it encodes as %q", b, c)
			}
		}
	})
}
