package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/replay"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/policy"
)

// maxReplayPolicyBytes bounds the body of POST /v1/policy/replay (256 KiB).
const maxReplayPolicyBytes = 256 << 10

// replayPolicy is POST /v1/policy/replay: a candidate policy replayed on
// the calls recorded in the caller's tenant. 422 with the policy's
// problems (LINE:COL: message) when it does not load.
func (s *Server) replayPolicy(w http.ResponseWriter, r *http.Request, p Principal) {
	var req serverapi.ReplayRequest
	if !s.readJSON(w, r, maxReplayPolicyBytes, &req) {
		return
	}
	o := replay.Options{Tenant: p.Tenant}
	if req.Since != "" {
		d, err := time.ParseDuration(req.Since)
		if err != nil || d <= 0 {
			problemf(w, r, http.StatusBadRequest, "since: want a positive duration such as 24h")
			return
		}
		o.Since = s.now().Add(-d)
	}
	pol, problems, err := policy.ParsePolicy("candidate.yaml", strings.NewReader(req.Policy))
	if err != nil {
		prob := serverapi.Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid policy", Type: "about:blank", Detail: "the candidate policy does not load"}
		var pe *configfile.Error
		if errors.As(err, &pe) {
			for _, pr := range problems {
				prob.Errors = append(prob.Errors, pr.Error())
			}
		}
		writeProblem(w, r, prob)
		return
	}
	calls, err := replay.Calls(r.Context(), s.store, o)
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "reading the recorded calls failed")
		return
	}
	out := serverapi.ReplayResult{Report: replay.Replay(pol, replay.Seq(calls))}
	var b strings.Builder
	_ = replay.WriteText(&b, out.Report)
	out.Text = b.String()
	writeJSON(w, http.StatusOK, out)
}
