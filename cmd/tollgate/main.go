// Command tollgate runs LLM agents whose every tool call is governed: hooks,
// policies and approvals decide what runs, and every decision is recorded.
//
//	tollgate run --model script:PATH|openai:MODEL|anthropic:MODEL [--workdir DIR]
//	             [--deny GLOB]... [--hooks FILE]... [--policy FILE] [--mcp FILE]... PROMPT
//	tollgate tools [--workdir DIR] [--mcp FILE]
//	tollgate hooks check FILE...
//	tollgate policy check FILE
//	tollgate policy explain FILE --tool NAME --args JSON
//	tollgate approvals list|show|approve|deny
//	tollgate resume RUN_ID
//
// Exit status: 0 done, 1 error, 2 usage, 3 pending (the run waits for an
// answer), 4 incomplete (MaxTurns reached). Run `tollgate --help` for the rest.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGINT and SIGTERM cancel the run: running tools' process groups are
	// killed, ON_STOP hooks still fire, and the error names the signal.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		cancel(fmt.Errorf("interrupted by %v", sig))
		signal.Stop(sigs) // a second signal ends the process at once
	}()
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}
