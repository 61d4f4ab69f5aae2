package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/policy"
)

// The builtin file tools ask the policy again about the file they opened:
// a link that leads into a denied directory (planted after the decision,
// say) is refused at the file.
func ExampleCheckFile() {
	ws, _ := os.MkdirTemp("", "tollgate-example")
	defer os.RemoveAll(ws)
	_ = os.MkdirAll(filepath.Join(ws, "secret"), 0o755)
	_ = os.WriteFile(filepath.Join(ws, "secret", "key.txt"), []byte("k\n"), 0o644)
	_ = os.Symlink("secret", filepath.Join(ws, "public"))

	pol, err := policy.NewPolicy(policy.PolicySpec{Rules: []policy.Rule{{
		ID: "no-secret", Args: []policy.ArgCondition{{Field: "path", PathPrefix: "secret"}},
		Decision: approval.Deny, Reason: "secret is off limits",
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	real, _ := filepath.EvalSymlinks(ws)
	if pol, err = pol.WithWorkdir(real, ws); err != nil {
		fmt.Println(err)
		return
	}
	tools, err := builtin.New(ws, &builtin.Options{CheckFile: func(ctx context.Context, u builtin.FileUse) error {
		return approval.CheckFile(ctx, approval.Call{Tool: u.Tool, Args: u.Args, Hints: u.Hints}, u.Links, pol)
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	read := tools[1] // in the order of builtin.Names
	res, _ := read.Call(context.Background(), json.RawMessage(`{"path":"public/key.txt"}`))
	fmt.Println(res.Output)
	// Output:
	// refused: public/key.txt leads to secret/key.txt: denied by rule:no-secret: secret is off limits
}
