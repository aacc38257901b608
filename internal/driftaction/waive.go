package driftaction

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/render"
)

// Waiver is what a user asks a waiver for: the drift of Paths in Clusters,
// or in the clusters Selector selects, may stay For a while.
type Waiver struct {
	Clusters, Paths []string
	Selector        *typesv1beta1.ClusterSelector
	For             time.Duration
	Reason, Owner   string
}

// Of returns the waiver w asks for, from now: it expires For from now, to
// the second.
func (w Waiver) Of(now time.Time) typesv1beta1.DriftWaiver {
	out := typesv1beta1.DriftWaiver{
		Expires: metav1.NewTime(now.Add(w.For).UTC().Truncate(time.Second)),
		Reason:  w.Reason,
		Owner:   w.Owner,
	}
	if w.Selector != nil {
		out.ClusterSelector = w.Selector.DeepCopy()
	}
	for _, c := range w.Clusters {
		out.Clusters = append(out.Clusters, typesv1beta1.ClusterName(c))
	}
	for _, p := range w.Paths {
		out.Paths = append(out.Paths, typesv1beta1.JSONPointer(p))
	}
	return out
}

// Waive adds waiver to r's spec.driftPolicy.waivers with c's identity (a
// server-side dry run when dryRun), keeping the others.
func Waive(ctx context.Context, c client.Client, r *memberdiff.Resource, waiver typesv1beta1.DriftWaiver, dryRun bool) error {
	spec, err := render.ParseSpec(r.Fed)
	if err != nil {
		return err
	}
	var waivers []typesv1beta1.DriftWaiver
	if spec.DriftPolicy != nil {
		waivers = spec.DriftPolicy.Waivers
	}
	return WriteSpec(ctx, c, r.Fed, append(waivers, waiver), dryRun, "driftPolicy", "waivers")
}
