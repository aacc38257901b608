package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// firstListWait is how long a page waits for a new identity's caches to
// list once before it answers with what there is.
const firstListWait = 10 * time.Second

// WhoAmI says who the console acts as.
type WhoAmI struct {
	Mode Mode   `json:"mode"`
	User string `json:"user,omitempty"`
}

func (s *Server) serveWhoAmI(w http.ResponseWriter, r *http.Request, v *view) {
	out := WhoAmI{Mode: s.opts.Mode}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	if user, err := selfReview(ctx, v.client); err == nil {
		out.User = user
	}
	writeJSON(w, http.StatusOK, out)
}

// serveFleet answers a page of the fleet. Its Server-Timing header says
// how long the console took to select, count and encode it.
func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request, v *view) {
	v.wait(r.Context(), firstListWait)
	start := time.Now()
	out := v.ix.fleet(ParseFilter(r.URL.Query()))
	out.Problems = v.problems(v.cpvs, v.clusters)
	data, err := json.Marshal(out)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Server-Timing", fmt.Sprintf("fleet;dur=%.3f", float64(time.Since(start).Microseconds())/1000))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

func (s *Server) serveHistory(w http.ResponseWriter, r *http.Request, v *view) {
	v.wait(r.Context(), firstListWait)
	out := v.ix.history(ParseFilter(r.URL.Query()))
	out.Problems = v.problems(v.cpvs)
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) serveClusters(w http.ResponseWriter, r *http.Request, v *view) {
	v.wait(r.Context(), firstListWait)
	out := Clusters{Clusters: v.ix.clusterList(v.lease), Problems: v.problems(v.clusters, v.cpvs, v.leases)}
	writeJSON(w, http.StatusOK, out)
}
