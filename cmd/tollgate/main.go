// Command tollgate runs LLM agents whose every tool call is governed: hooks,
// policies and approvals decide what runs, and every decision is recorded.
//
//	tollgate run --model script:PATH|openai:MODEL|anthropic:MODEL [--workdir DIR]
//	             [--deny GLOB]... [--hooks FILE]... [--policy FILE] [--mcp FILE]... PROMPT
//	tollgate tools [--workdir DIR] [--mcp FILE]
//	tollgate hooks check FILE...
//	tollgate policy check FILE
//	tollgate approvals list|show|approve|deny
//	tollgate resume RUN_ID
//
// Exit status: 0 done, 1 error, 2 usage, 3 pending (the run waits for an
// answer), 4 incomplete (MaxTurns reached). Run `tollgate --help` for the rest.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
