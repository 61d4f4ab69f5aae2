package runbuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/records"
	"github.com/tollgate-dev/tollgate/runs"
)

// setupApproval applies PolicyFile, Autonomy, ApprovalTTL and RecordsFile,
// and protects the state directory, the policy and the records.
func setupApproval(ctx context.Context, s *setup) error {
	cfg := s.cfg
	s.opts.ApprovalTTL = time.Duration(cfg.ApprovalTTL)
	if cfg.PolicyFile != "" || cfg.Autonomy != "" {
		pol, err := LoadPolicy(cfg.PolicyFile, cfg.Autonomy, s.b.opts.Notice)
		if err != nil {
			return err
		}
		if pol, err = WorkspacePolicy(pol, cfg.Workdir); err != nil {
			return &runs.FieldError{Field: runcore.FieldPolicyFile, Err: err}
		}
		s.opts.Authorizers = append(s.opts.Authorizers, pol)
	}
	if cfg.RecordsFile != "" {
		w, err := records.OpenFile(cfg.RecordsFile, &records.Options{Logger: s.b.opts.Logger, Workspace: cfg.Workdir})
		if err != nil {
			return &runs.FieldError{Field: runcore.FieldRecordsFile, Err: err}
		}
		s.closers = append(s.closers, w.Close)
		s.records = w
		prev := s.opts.OnRecord
		s.opts.OnRecord = func(ctx context.Context, rec gate.Record) {
			if prev != nil {
				prev(ctx, rec)
			}
			w.Record(ctx, rec)
		}
	}
	// No tool may write the store, the policy or the records. The store's
	// directory must exist to be protected (else a command could make it
	// and plant a store in it).
	if dir := s.b.opts.StateDir; dir != "" {
		if s.sandbox.sb != nil {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("state directory %s: %w", dir, err)
			}
		}
		s.addProtected(dir)
	}
	if cfg.PolicyFile != "" {
		s.addProtected(cfg.PolicyFile)
	}
	if cfg.RecordsFile != "" {
		s.addProtected(cfg.RecordsFile)
	}
	return nil
}

// LoadPolicy loads the policy file (if any; else an empty policy named
// "autonomy"), passes its warnings to notice as "policy: PROBLEM", and
// applies the autonomy level when not empty. Errors are [*runs.FieldError]s
// naming policyFile or autonomy.
func LoadPolicy(file, autonomy string, notice func(string)) (*policy.Policy, error) {
	var pol *policy.Policy
	if file != "" {
		p, problems, err := policy.LoadPolicy(file)
		for _, pr := range problems {
			if pr.Severity == configfile.SeverityWarning && notice != nil {
				notice(fmt.Sprint("policy: ", pr))
			}
		}
		if err != nil {
			return nil, &runs.FieldError{Field: runcore.FieldPolicyFile, Err: err}
		}
		pol = p
	} else {
		p, err := policy.NewPolicy(policy.PolicySpec{Name: "autonomy"})
		if err != nil {
			return nil, err
		}
		pol = p
	}
	if autonomy != "" {
		a, err := approval.ParseAutonomy(autonomy)
		if err != nil {
			return nil, &runs.FieldError{Field: runcore.FieldAutonomy, Err: err}
		}
		if pol, err = pol.WithAutonomy(a); err != nil {
			return nil, &runs.FieldError{Field: runcore.FieldAutonomy, Err: err}
		}
	}
	return pol, nil
}

// WorkspacePolicy returns pol as the builtin tools on workdir need it: its
// path rules see a relative path as relative to workdir, and the workspace
// as given and with its links resolved as the same place
// ([policy.Policy.WithWorkdir]); each file an apply_patch call touches is
// a path the rules see ([policy.Policy.WithPaths], [builtin.PatchPaths]).
// Without it a rule on "secret/" does not match "./secret/key.txt" or the
// absolute path of the same file.
func WorkspacePolicy(pol *policy.Policy, workdir string) (*policy.Policy, error) {
	real, err := filepath.EvalSymlinks(workdir)
	if err != nil {
		real = workdir
	}
	if pol, err = pol.WithWorkdir(real, workdir); err != nil {
		return nil, err
	}
	return pol.WithPaths("apply_patch", builtin.PatchPaths), nil
}
