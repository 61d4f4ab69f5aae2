package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/configread"
)

// Limits of request bodies.
const (
	// maxBodyBytes bounds a JSON request body (1 MiB), except a prompt's.
	maxBodyBytes = 1 << 20
	// maxPromptBytes bounds the body of POST /v1/runs (4 MiB).
	maxPromptBytes = 4 << 20
	// maxBodyDepth bounds the nesting of a JSON request body.
	maxBodyDepth = 64
	// maxIdempotencyKey bounds the Idempotency-Key header, in bytes.
	maxIdempotencyKey = 255
)

// readJSON decodes a bounded JSON body into v with [decodeBody]; on
// failure it writes the problem (413 over max bytes, 400 otherwise).
// The body must arrive within the server's BodyReadTimeout: a slower one is
// 408, and the connection is closed.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, max int64, v any) bool {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
	body, err := bounded.Read(r.Body, "body", bounded.Limits{MaxBytes: max})
	_ = rc.SetReadDeadline(time.Time{})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.Header().Set("Connection", "close")
		problemf(w, r, http.StatusRequestTimeout, fmt.Sprintf("the body did not arrive within %s", s.bodyTimeout))
		return false
	}
	if bounded.IsLimit(err) {
		problemf(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", max))
		return false
	}
	if err == nil {
		err = decodeBody("body", body, max, v)
	}
	if err != nil {
		problemf(w, r, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// decodeBody decodes the JSON object b (named name in errors) into v, as
// every request body and WebSocket message is read: at most max bytes and
// maxBodyDepth levels, no key given twice in one object (Go keeps the
// last value, a proxy or log may keep the first: "deny" logged, "approve"
// done), and no field v does not have.
func decodeBody(name string, b []byte, max int64, v any) error {
	if err := bounded.CheckJSON(name, b, bounded.Limits{MaxBytes: max, MaxDepth: maxBodyDepth}); err != nil {
		return err
	}
	if err := bounded.UniqueKeys(name, b); err != nil {
		return jsonProblem(name, b, err)
	}
	if err := exactKeys(name, b, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(name, b, err)
	}
	return nil
}

// jsonProblem says in the client's terms what encoding/json found wrong
// in the body b (named name): where the JSON is not valid
// (line and column), which field has a value of the wrong kind. Other
// errors are wrapped (a key v has no field for is exactKeys' to say).
func jsonProblem(name string, b []byte, err error) error {
	var syntax *json.SyntaxError
	var kind *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		at := configread.LineCol(b, int(min(max(syntax.Offset, 0), int64(len(b)))))
		return fmt.Errorf("%s: not valid JSON at line %d, column %d: %s", name, at.Line, at.Col, syntax.Error())
	case errors.As(err, &kind) && kind.Field != "":
		return fmt.Errorf("%s: %s: want %s, got a JSON %s", name, bounded.Cut(kind.Field, 80), jsonKind(kind.Type), bounded.Cut(kind.Value, 80))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: the JSON ends too soon", name)
	}
	return fmt.Errorf("the %s is not the expected JSON object: %s", name, bounded.Cut(err.Error(), 200))
}

// jsonKind names the JSON a Go type takes.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// exactKeys checks that every key of the JSON value b that encoding/json
// would decode into a field of the struct type t (through pointers,
// slices, arrays and nested structs) is that field's name exactly:
// encoding/json also matches a name in another case ("Decision" for
// "decision"), and keeps the last of two such keys, where a proxy or a log
// matching names exactly keeps the one it knows ({"decision":"deny",
// "Decision":"approve"} logged as deny, decided as approve). A key that is
// no field's name in any case is refused too, with the fields of its
// object (the decoder's DisallowUnknownFields only names the key). b is
// valid JSON (bounded.CheckJSON).
func exactKeys(name string, b []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		if t.Kind() != reflect.Pointer {
			var elems []json.RawMessage
			if json.Unmarshal(b, &elems) != nil {
				return nil
			}
			for _, e := range elems {
				if err := exactKeys(name, e, t.Elem()); err != nil {
					return err
				}
			}
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(reflect.TypeFor[json.Unmarshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil // not an object: the decoder says what is wrong
	}
	fields := jsonFields(t)
	for k, v := range obj {
		ft, ok := fields[k]
		if !ok {
			for f := range fields {
				if strings.EqualFold(f, k) {
					return fmt.Errorf("the %s has the key %q; names are case-sensitive: want %q", name, bounded.Cut(k, 64), f)
				}
			}
			// The key cut: a body may be 4 MiB.
			return fmt.Errorf("%s: unknown field %q (its fields: %s)", name, bounded.Cut(k, 80), strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		}
		if err := exactKeys(name, v, ft); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields returns the JSON names of the fields of the struct type t, as
// encoding/json names them (the json tag's name, else the Go name; fields
// tagged "-" and unexported ones left out; embedded structs' fields
// promoted), with each field's type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		n, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && n == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		out[cmp.Or(n, f.Name)] = f.Type
	}
	return out
}
