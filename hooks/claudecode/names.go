package claudecode

import "encoding/json"

// mainArg returns the argument an "if" glob is matched against.
func mainArg(claudeName string, input json.RawMessage) string {
	var m map[string]any
	_ = json.Unmarshal(input, &m)
	pick := func(k string) string { s, _ := m[k].(string); return s }
	switch claudeName {
	case "Bash":
		return pick("command")
	case "Read", "Write", "Edit":
		return pick("file_path")
	case "Grep", "Glob":
		return pick("pattern")
	}
	return string(input)
}
