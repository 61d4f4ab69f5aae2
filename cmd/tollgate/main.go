// Command tollgate runs LLM agents whose every tool call is governed: hooks,
// policies and approvals decide what runs, and every decision is recorded.
//
//	tollgate run --model script:PATH|openai:MODEL|anthropic:MODEL [--workdir DIR]
//	             [--deny GLOB]... [--hooks FILE]... [--policy FILE] [--mcp FILE]... PROMPT|-
//	tollgate tools [--workdir DIR] [--mcp FILE] [--json]
//	tollgate hooks check FILE...
//	tollgate policy check FILE
//	tollgate policy explain FILE --tool NAME --args JSON
//	tollgate approvals list|show|approve|deny|answer [--json]
//	tollgate resume RUN_ID
//	tollgate runs list|show|cancel|prune [--json]
//	tollgate serve --config server.yaml [--addr HOST:PORT]
//	tollgate serve token --name NAME [--tenant TENANT] --role ROLE...
//
// Runs are stored in the state directory ($TOLLGATE_STATE_DIR, else
// $XDG_STATE_HOME/tollgate, else ~/.local/state/tollgate) and driven by
// package runs.
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
	"time"

	"github.com/tollgate-dev/tollgate/sandbox"
)

// stopGrace is how long the command lets a cancelled run unwind (tools and
// hooks killed, ON_STOP hooks, the run stored) after the first SIGINT or
// SIGTERM before it exits regardless.
const stopGrace = 15 * time.Second

func main() {
	// Started as the sandbox helper (by a sandboxed bash call, command hook
	// or MCP server), run as that and never return.
	sandbox.Main()
	// The keys in this process's environment are not for its children.
	hideEnviron()
	// SIGINT and SIGTERM cancel the run: running tools' process groups are
	// killed, ON_STOP hooks still fire, and the error names the signal.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		cancel(fmt.Errorf("interrupted by %v", sig))
		signal.Stop(sigs) // a second signal ends the process at once
		// The first signal always ends the run: if unwinding it takes longer
		// than stopGrace (something that ignores cancellation), exit anyway.
		time.AfterFunc(stopGrace, func() {
			fmt.Fprintf(os.Stderr, "tollgate: %v: the run did not stop within %s; exiting\n", sig, stopGrace)
			os.Exit(exitError)
		})
	}()
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}
