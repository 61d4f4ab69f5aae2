package server

import (
	"net/http"
	"time"

	"github.com/tollgate-dev/tollgate/internal/replay"
	"github.com/tollgate-dev/tollgate/internal/serverapi"
)

// shadowCounts is GET /v1/shadow?since=DURATION: the shadow votes recorded
// beside the decisions of the tenant's runs, counted. It reads every run
// of the tenant (since bounds the calls counted, not the runs read).
func (s *Server) shadowCounts(w http.ResponseWriter, r *http.Request, p Principal) {
	o := replay.Options{Tenant: p.Tenant}
	out := serverapi.ShadowPage{}
	if v := r.URL.Query().Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			problemf(w, r, http.StatusBadRequest, "since: want a positive duration such as 24h")
			return
		}
		o.Since = s.now().Add(-d)
		out.Since = &o.Since
	}
	calls, err := replay.Calls(r.Context(), s.store, o)
	if err != nil {
		problemf(w, r, http.StatusInternalServerError, "reading the recorded calls failed")
		return
	}
	out.Calls, out.Rules = len(calls), replay.RecordedShadow(replay.Seq(calls))
	writeJSON(w, http.StatusOK, out)
}
