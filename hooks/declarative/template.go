package declarative

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Expand replaces every ${name} in template with the value of name in hctx,
// formatted as [FormatValue] does (seed 000: "${name} is replaced with the
// context value of that name. A name that is not in the context stays as
// written."). A name is one or more ASCII letters, digits, '_', '.' or '-';
// anything else after "${" (including "${}" and an unclosed "${") is left as
// written, as is $name without braces, so shell variables such as $f and
// ${HOME} (when HOME is not a context key) reach the shell unchanged.
//
// Expansion is one pass: text that a value brings in is never expanded again.
// Values are not quoted; see the package documentation before using ${tool},
// ${args}, ${callId} or ${error} in a shell command.
func Expand(template string, hctx map[string]any) string {
	i := strings.Index(template, "${")
	if i < 0 || len(hctx) == 0 {
		return template
	}
	var b strings.Builder
	b.Grow(len(template))
	for i >= 0 {
		b.WriteString(template[:i])
		rest := template[i+2:]
		n := nameLen(rest)
		if n > 0 && n < len(rest) && rest[n] == '}' {
			if v, ok := hctx[rest[:n]]; ok {
				b.WriteString(FormatValue(v))
				template = rest[n+1:]
				i = strings.Index(template, "${")
				continue
			}
		}
		b.WriteString("${")
		template = rest
		i = strings.Index(template, "${")
	}
	b.WriteString(template)
	return b.String()
}

// templateNames returns the names of the ${name} references in template, in
// order, for load-time checks.
func templateNames(template string) []string {
	var out []string
	for {
		i := strings.Index(template, "${")
		if i < 0 {
			return out
		}
		rest := template[i+2:]
		n := nameLen(rest)
		if n > 0 && n < len(rest) && rest[n] == '}' {
			out = append(out, rest[:n])
			template = rest[n+1:]
			continue
		}
		template = rest
	}
}

func nameLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return i
		}
	}
	return len(s)
}

// FormatValue is how a context value appears in a template, an environment
// variable and a log line: a string as is; json.RawMessage and []byte as
// their text; bool as true or false; integers in decimal; floats in the
// shortest form that round-trips ('g'); a time.Duration as its String; nil as
// the empty string; an error by its Error method; a fmt.Stringer by String;
// anything else as JSON (or with %v when it does not encode).
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.RawMessage:
		return string(x)
	case []byte:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint8:
		return strconv.FormatUint(uint64(x), 10)
	case uint16:
		return strconv.FormatUint(uint64(x), 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Duration:
		return x.String()
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}
