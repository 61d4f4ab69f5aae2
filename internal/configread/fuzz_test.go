package configread

import (
	"errors"
	"testing"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/bounded"
)

// FuzzDecodeYAML: any document decodes or fails with a *configfile.Error
// whose problems name the file; it never panics.
func FuzzDecodeYAML(f *testing.F) {
	for _, s := range []string{
		"addr: x\nagents:\n  a:\n    modle: m\n",
		"webhooks:\n  - url: u\n    urll: v\n",
		"agents: {a: {sandbox: {bash: off}}}",
		"? [a]\n: b\n",
		"agents:\n  a: !x 0\n",
		"x: &a 1\ny: *a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		var d serverDoc
		_, err := DecodeYAML("f.yaml", src, &d, bounded.Limits{MaxBytes: 1 << 16, MaxDepth: 16})
		if err == nil {
			return
		}
		var ce *configfile.Error
		if !errors.As(err, &ce) || len(ce.Problems) == 0 {
			t.Fatalf("error %v (%T) is not a *configfile.Error", err, err)
		}
		for _, p := range ce.Problems {
			if p.File != "f.yaml" || p.Line < 0 || p.Col < 0 {
				t.Fatalf("problem %+v", p)
			}
		}
	})
}

// FuzzObject: any JSON text splits into members whose offsets are inside
// it, or fails with an *OffsetError inside it.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{"a": 1, "b": {"c": [1, 2]}}`, `{"a": 1, "a": 2}`, `[1]`, `{"a": `, `{} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, base, err := Document(data)
		if err == nil {
			var ms []Member
			ms, err = Object(top, base)
			for _, m := range ms {
				if m.KeyOff < 0 || m.KeyOff > len(data) || m.ValueOff < m.KeyOff || m.ValueOff > len(data) {
					t.Fatalf("member %q at %d/%d outside %d bytes", m.Key, m.KeyOff, m.ValueOff, len(data))
				}
			}
		}
		if err == nil {
			return
		}
		oe, ok := errors.AsType[*OffsetError](err)
		if !ok || oe.Off < 0 || oe.Off > len(data) {
			t.Fatalf("error %v (%T)", err, err)
		}
	})
}
