package claudenames

import "testing"

func TestNamesRoundTrip(t *testing.T) {
	in := `{"path":"src/a.go","oldString":"x","newString":"y","replaceAll":true}`
	c := ToInput("edit", []byte(in), "/ws")
	if want := `{"file_path":"/ws/src/a.go","new_string":"y","old_string":"x","replace_all":true}`; string(c) != want {
		t.Fatalf("to Claude: %s, want %s", c, want)
	}
	back := FromInput("edit", c)
	if want := `{"newString":"y","oldString":"x","path":"/ws/src/a.go","replaceAll":true}`; string(back) != want {
		t.Fatalf("back: %s, want %s", back, want)
	}
	if g := ToInput("grep", []byte(`{"pattern":"x","include":"*.go"}`), "/ws"); string(g) != `{"glob":"*.go","pattern":"x"}` {
		t.Fatalf("grep: %s", g)
	}
	if n := Name("mcp__fs__read"); n != "mcp__fs__read" || Name("bash") != "Bash" {
		t.Fatal("names")
	}
}
