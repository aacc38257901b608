package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/driftaction"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
)

// ActionResult is the answer of a codify or a waive.
type ActionResult struct {
	// Message says what was written, naming paths but no values, or why
	// nothing was.
	Message string `json:"message"`
}

// WaiveRequest is the body of a waive: how long, and why.
type WaiveRequest struct {
	For    string `json:"for"`
	Reason string `json:"reason"`
	Owner  string `json:"owner,omitempty"`
}

// serveCodify makes the drifted values of ?cluster='s copy that cluster's
// overrides, as `fedwarden drift codify` does (driftaction.Codify): the
// member is read with the credentials the host keeps for it, read with
// the user's identity, and the federated resource is written with it.
func (s *Server) serveCodify(w http.ResponseWriter, r *http.Request, v *view) {
	if !fromConsole(w, r, "a codify") {
		return
	}
	found := s.findRow(w, r, v)
	if found == nil {
		return
	}
	res, err := s.diffResource(r, v, found)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, ActionResult{Message: err.Error()})
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	cluster := r.URL.Query().Get("cluster")
	cd, err := driftaction.Codify(ctx, memberdiff.Options{Members: s.members, Host: v.client, Timeout: s.opts.RequestTimeout}, res, cluster, nil)
	if err != nil {
		writeJSON(w, http.StatusConflict, ActionResult{Message: err.Error()})
		return
	}
	if err := cd.Write(ctx, v.client, res, false); err != nil {
		writeJSON(w, statusOf(err), ActionResult{Message: apiMessage(err)})
		return
	}
	paths := make([]string, 0, len(cd.Changes))
	for _, c := range cd.Changes {
		paths = append(paths, c.Path)
	}
	writeJSON(w, http.StatusOK, ActionResult{Message: fmt.Sprintf("codified %s into %s's overrides: the copy there keeps its values", strings.Join(paths, ", "), cluster)})
}

// serveWaive adds a waiver of the drifted paths of ?cluster='s copy, for
// the body's duration and reason, as `fedwarden drift waive` does, with the
// user's identity.
func (s *Server) serveWaive(w http.ResponseWriter, r *http.Request, v *view) {
	if !fromConsole(w, r, "a waive") {
		return
	}
	var req WaiveRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, ActionResult{Message: "the body must be {\"for\": \"4h\", \"reason\": \"…\"}: " + err.Error()})
		return
	}
	lasts, err := time.ParseDuration(req.For)
	if err != nil || lasts <= 0 || lasts > drift.DefaultMaxWaiver || req.Reason == "" || len(req.Reason) > 256 || len(req.Owner) > 128 {
		writeJSON(w, http.StatusBadRequest, ActionResult{Message: fmt.Sprintf("a waiver needs a duration from 1s to %s, such as 4h, and a reason of at most 256 characters", drift.DefaultMaxWaiver)})
		return
	}
	found := s.findRow(w, r, v)
	if found == nil {
		return
	}
	cluster := r.URL.Query().Get("cluster")
	i := slices.IndexFunc(found.cpv.Status.ClusterVersions, func(cv typesv1beta1.ClusterVersion) bool { return string(cv.ClusterName) == cluster })
	if i < 0 || len(found.cpv.Status.ClusterVersions[i].ChangedPaths) == 0 {
		writeJSON(w, http.StatusConflict, ActionResult{Message: fmt.Sprintf("%s has no changed paths in cluster %q to waive", found.id, cluster)})
		return
	}
	paths := found.cpv.Status.ClusterVersions[i].ChangedPaths
	res, err := s.diffResource(r, v, found)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, ActionResult{Message: err.Error()})
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	waiver := driftaction.Waiver{Clusters: []string{cluster}, Paths: paths, For: lasts, Reason: req.Reason, Owner: req.Owner}.Of(time.Now())
	if err := driftaction.Waive(ctx, v.client, res, waiver, false); err != nil {
		writeJSON(w, statusOf(err), ActionResult{Message: apiMessage(err)})
		return
	}
	msg := fmt.Sprintf("waived %s in %s until %s", strings.Join(paths, ", "), cluster, waiver.Expires.UTC().Format(time.RFC3339))
	// As `fedwarden drift waive` does, the answer waits until the
	// controller-manager has taken the waiver up, and says so when it has
	// not: an edit made before may still be healed.
	if observed, generation, err := driftaction.TakenUp(ctx, v.client, res.Fed, waiveTakenUpWithin); err != nil || observed < generation {
		msg += "; " + driftaction.NotTakenUp(waiveTakenUpWithin, observed, generation, err)
	} else {
		msg += ": the controller-manager has taken it up"
	}
	writeJSON(w, http.StatusOK, ActionResult{Message: msg})
}

// waiveTakenUpWithin is how long a Waive waits for the controller-manager
// to take the waiver up, within the request's own timeout.
const waiveTakenUpWithin = 10 * time.Second

// fromConsole refuses a write that does not come from the console's own
// page: a page of another site cannot send the header without the console
// allowing it (CORS), which it never does.
func fromConsole(w http.ResponseWriter, r *http.Request, what string) bool {
	if r.Header.Get(consoleHeader) == "1" {
		return true
	}
	writeJSON(w, http.StatusForbidden, ActionResult{Message: what + " must come from the console's page (header " + consoleHeader + ": 1)"})
	return false
}

// statusOf is the HTTP status of a write's error: the host's own, else
// 502.
func statusOf(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 400 {
		return int(status.Status().Code)
	}
	return http.StatusBadGateway
}
