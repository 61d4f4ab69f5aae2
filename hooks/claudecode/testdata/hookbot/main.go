// Command hookbot is a Claude Code hook written in Go, for the tests of
// package claudecode. It reads the hook's JSON on stdin and, by its first
// argument:
//
//	save FILE       writes stdin to FILE and exits 0
//	append SUFFIX   answers updatedInput with tool_input.command + SUFFIX
//	signal          kills itself with SIGKILL
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil || len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "hookbot: usage: hookbot save FILE | append SUFFIX | signal")
		os.Exit(1)
	}
	switch os.Args[1] {
	case "save":
		if err := os.WriteFile(os.Args[2], in, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "append":
		var ev struct {
			ToolInput map[string]any `json:"tool_input"`
		}
		if err := json.Unmarshal(in, &ev); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ev.ToolInput["command"] = fmt.Sprint(ev.ToolInput["command"]) + os.Args[2]
		out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "updatedInput": ev.ToolInput,
		}})
		os.Stdout.Write(out)
	case "signal":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}
