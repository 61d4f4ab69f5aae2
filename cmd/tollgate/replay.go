package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/replay"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// newPolicyReplayCmd is 'tollgate policy replay FILE': a candidate policy
// evaluated on the calls recorded in the store.
func newPolicyReplayCmd(env *cliEnv) *cobra.Command {
	state := &stateFlags{}
	var since time.Duration
	var jsonOut bool
	c := &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay the calls recorded in the store against a candidate policy and show what it changes",
		Long: `Evaluate the policy FILE on every tool call recorded in the store (every
tenant's, with the arguments as they ran) and show the decisions it changes
(allow -> ask, ask -> allow, ...), the approvals it would have saved or added,
and up to five examples of each change. The recorded decision is the one the
rules and the autonomy level made then; what people answered is shown beside
it. The same store and FILE give the same output.`,
		Args: argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if since < 0 {
				return usageErr("policy replay: --since %s: want a positive duration", since)
			}
			p, problems, err := policy.LoadPolicy(args[0])
			for _, pr := range problems {
				fmt.Fprintln(env.stderr, pr)
			}
			if err != nil {
				var pe *configfile.Error
				if !errors.As(err, &pe) {
					printError(env.stderr, err)
				}
				return withCode(exitError, nil)
			}
			s, err := state.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			o := replay.Options{AllTenants: true, Hints: cachedHints()}
			if since > 0 {
				o.Since = time.Now().Add(-since)
			}
			calls, err := replay.Calls(c.Context(), s, o)
			if err != nil {
				return withCode(exitError, err)
			}
			r := replay.Replay(p, replay.Seq(calls))
			if jsonOut {
				enc := json.NewEncoder(env.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return replay.WriteText(env.stdout, r)
		},
	}
	state.add(c.Flags(), env)
	c.Flags().DurationVar(&since, "since", 0, "replay only the calls decided in this last while (24h, 30m); 0 replays all")
	c.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	return c
}

// cachedHints is builtinHints, each name looked up once.
func cachedHints() func(string) *tool.Hints {
	seen := map[string]*tool.Hints{}
	return func(name string) *tool.Hints {
		h, ok := seen[name]
		if !ok {
			h = builtinHints(name)
			seen[name] = h
		}
		return h
	}
}
