package serveconfig

import (
	"errors"
	"fmt"
	"slices"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/configread"
	"github.com/tollgate-dev/tollgate/internal/runcore"
)

// configLimits bound server.yaml and the tokens file.
var configLimits = bounded.Limits{MaxBytes: MaxConfigBytes, MaxDepth: MaxConfigDepth}

// decodeConfig reads server.yaml at path into y as [decodeStrict] does,
// and first refuses the keys of an agent's section that a run binds
// ([runcore.BoundKeys]), each at its key. A value the decoder refuses is
// reported with its field (agents.NAME.KEY) as well as its position.
func decodeConfig(path string, y *configYAML) (*ast.File, error) {
	src, err := configread.ReadFile(path, bounded.Limits{MaxBytes: MaxConfigBytes})
	if err != nil {
		return nil, err
	}
	parsed := parse(path, src)
	if err := refuseBound(path, parsed); err != nil {
		return nil, err
	}
	f, err := configread.DecodeYAML(path, src, y, configLimits)
	if err != nil {
		return nil, withField(err, parsed)
	}
	return f, nil
}

// parse returns src's syntax tree, or nil when it is past the limits or
// does not parse (which [configread.DecodeYAML] then reports).
func parse(path string, src []byte) *ast.File {
	if bounded.CheckYAML(path, src, configLimits) != nil {
		return nil
	}
	f, err := configread.ParseYAML(path, src, 0)
	if err != nil {
		return nil
	}
	return f
}

// refuseBound returns a problem for every key of an agent's section that
// a run binds when it starts, at the key.
func refuseBound(path string, f *ast.File) error {
	if f == nil {
		return nil
	}
	ps := configread.Problems{File: path}
	body, _ := configread.Body(f)
	top, _ := configread.Entries(body)
	for _, mv := range top {
		if configread.Key(mv) != "agents" {
			continue
		}
		agents, _ := configread.Entries(mv.Value)
		for _, a := range agents {
			keys, _ := configread.Entries(a.Value)
			for _, k := range keys {
				if key := configread.Key(k); slices.Contains(runcore.BoundKeys(), key) {
					ps.Add(configread.NodePos(k), "agents."+configread.Key(a)+"."+key,
						"a run sets its %s when it starts; a configuration file does not", key)
				}
			}
		}
	}
	return ps.Err()
}

// withField returns err, a decoding error of one problem at a position
// but of no field, with the field of the value at that position in f
// ("agents.NAME.timeout"); other errors as they are.
func withField(err error, f *ast.File) error {
	ce, ok := errors.AsType[*configfile.Error](err)
	if !ok || len(ce.Problems) != 1 || ce.Problems[0].Field != "" || ce.Problems[0].Line == 0 || f == nil {
		return err
	}
	p := &ce.Problems[0]
	body, _ := configread.Body(f)
	if field, ok := fieldAt(body, configread.Pos{Line: p.Line, Col: p.Col}, ""); ok {
		p.Field = field
	}
	return err
}

// fieldAt returns the field ("agents.a.sandbox.connect[0]") of the value
// of n that starts at pos, or false when none does.
func fieldAt(n ast.Node, pos configread.Pos, field string) (string, bool) {
	if n == nil {
		return "", false
	}
	if configread.NodePos(n) == pos && field != "" {
		return field, true
	}
	if entries, ok := configread.Entries(n); ok {
		for _, mv := range entries {
			key := configread.Key(mv)
			if field != "" {
				key = field + "." + key
			}
			if got, ok := fieldAt(mv.Value, pos, key); ok {
				return got, true
			}
		}
	}
	if seq, ok := configread.Unwrap(n).(*ast.SequenceNode); ok {
		for i, el := range seq.Values {
			if got, ok := fieldAt(el, pos, fmt.Sprintf("%s[%d]", field, i)); ok {
				return got, true
			}
		}
	}
	return "", false
}

// decodeError records a decoder's error about one value at its position,
// with its field ([fieldAt]).
func (p *problems) decodeError(err error) {
	p.list.File = p.path
	var ye yaml.Error
	if !errors.As(err, &ye) {
		p.list.Add(configread.Pos{}, "", "%v", err)
		return
	}
	pos := configread.TokenPos(ye.GetToken())
	body, _ := configread.Body(p.f)
	field, _ := fieldAt(body, pos, "")
	p.list.Add(pos, field, "%s", ye.GetMessage())
}
