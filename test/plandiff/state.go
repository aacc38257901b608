package plandiff

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/inprocess"
)

// state is what the host and the members have of a case's resource.
type state struct {
	fed    *unstructured.Unstructured
	status typesv1beta1.FederatedStatus
	cpv    *typesv1beta1.ClusterPropagatedVersion
	// entries are the CPV's status.clusterVersions by cluster.
	entries map[string]typesv1beta1.ClusterVersion
	// copies are the members' copies by cluster; nil where none.
	copies map[string]*appsv1.Deployment
}

// readState reads the resource web of ns, its CPV and its copies.
func readState(ctx context.Context, b *inprocess.Bed, ns string) (state, error) {
	s := state{entries: map[string]typesv1beta1.ClusterVersion{}, copies: map[string]*appsv1.Deployment{}}
	fed := &unstructured.Unstructured{}
	fed.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("FederatedDeployment"))
	switch err := b.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, fed); {
	case err == nil:
		s.fed = fed
		raw, _, _ := unstructured.NestedMap(fed.Object, "status")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &s.status); err != nil {
			return s, err
		}
	case !apierrors.IsNotFound(err):
		return s, err
	}
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	switch err := b.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deployment-web"}, cpv); {
	case err == nil:
		s.cpv = cpv
		for _, cv := range cpv.Status.ClusterVersions {
			s.entries[string(cv.ClusterName)] = cv
		}
	case !apierrors.IsNotFound(err):
		return s, err
	}
	for _, m := range members {
		d := &appsv1.Deployment{}
		switch err := b.Members[m].Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); {
		case err == nil:
			s.copies[m] = d
		case !apierrors.IsNotFound(err):
			return s, err
		}
	}
	return s, nil
}

// placed are the clusters the CPV places the resource on.
func (s state) placed() map[string]bool {
	placed := map[string]bool{}
	if s.cpv != nil {
		for _, c := range s.cpv.Spec.Clusters {
			placed[string(c.Name)] = true
		}
	}
	return placed
}

// settled tells whether the controller is done with sp: it has synced the
// resource's generation (and acted on its resync), each placed cluster's
// entry agrees with its copy, no copy is left where the resource is not
// placed, and no wave is under way that can go on.
func (s state) settled(sp spec, pull []string) (bool, string) {
	if s.fed == nil || s.cpv == nil {
		return false, "no resource or no CPV yet"
	}
	gen := s.fed.GetGeneration()
	for _, typ := range []string{typesv1beta1.FederatedScheduled, typesv1beta1.FederatedPropagated} {
		if c := meta.FindStatusCondition(s.status.Conditions, typ); c == nil || c.ObservedGeneration != gen {
			return false, fmt.Sprintf("condition %s not of generation %d", typ, gen)
		}
	}
	if sp.resync != "" && s.cpv.Status.Resync != sp.resync {
		return false, "resync " + sp.resync + " not acted on"
	}
	placed := s.placed()
	for _, m := range members {
		if ok, why := s.clusterSettled(m, placed[m], sp.alert()); !ok {
			return false, m + ": " + why
		}
		// A Pull cluster's agent records the resync it acted on.
		if e, ok := s.entries[m]; ok && sp.resync != "" && slices.Contains(pull, m) && e.Resync != sp.resync {
			return false, m + ": its agent has not acted on resync " + sp.resync
		}
	}
	if !sp.waves {
		return true, ""
	}
	if s.status.Rollout == nil {
		return false, "no status.rollout"
	}
	for _, w := range s.status.Rollout.Waves {
		if (w.Phase == typesv1beta1.WaveProgressing || w.Phase == typesv1beta1.WaveBaking) && !s.stuck(w) {
			return false, "wave " + w.Name + " is " + string(w.Phase)
		}
	}
	return true, ""
}

// stuck tells whether wave w cannot go on: a copy of it drifted, and is
// left so (clusterSettled accepts a drift only under Alert).
func (s state) stuck(w typesv1beta1.WaveStatus) bool {
	return slices.ContainsFunc(w.Clusters, func(c typesv1beta1.ClusterName) bool { return isDrift(s.entries[string(c)].State) })
}

// clusterSettled tells whether cluster m's entry and copy agree.
func (s state) clusterSettled(m string, placed, alert bool) (bool, string) {
	entry, recorded := s.entries[m]
	cp := s.copies[m]
	if !placed {
		return !recorded && cp == nil, fmt.Sprintf("not placed, entry %v, copy %v", recorded, cp != nil)
	}
	if !recorded {
		return false, "placed, no entry"
	}
	switch entry.State {
	case typesv1beta1.InSync:
		// A Pull cluster's agent writes its entry after the host's sync.
		current := entry.TemplateVersion == s.cpv.Status.TemplateVersion && entry.OverrideVersion == s.cpv.Status.OverrideVersion
		return current && cp != nil && entry.Version == cp.ResourceVersion, "entry InSync at " + string(entry.TemplateVersion) + "/" + string(entry.OverrideVersion) + " of version " + entry.Version
	case typesv1beta1.RolloutPending:
		return cp != nil && entry.Version == cp.ResourceVersion, "entry " + string(entry.State) + " of version " + entry.Version
	case typesv1beta1.ModifiedOutOfBand:
		return alert && cp != nil && entry.Version == cp.ResourceVersion, "entry ModifiedOutOfBand of version " + entry.Version
	case typesv1beta1.Missing:
		return alert && cp == nil, "entry Missing"
	}
	return false, "entry " + string(entry.State)
}

func isDrift(s typesv1beta1.DriftState) bool {
	return s == typesv1beta1.ModifiedOutOfBand || s == typesv1beta1.Missing
}

func (s state) String() string {
	var parts []string
	if s.cpv != nil {
		parts = append(parts, fmt.Sprintf("CPV placed %v, versions %s/%s, resync %q", slices.Sorted(maps.Keys(s.placed())), s.cpv.Status.TemplateVersion, s.cpv.Status.OverrideVersion, s.cpv.Status.Resync))
	}
	if s.status.Rollout != nil {
		parts = append(parts, fmt.Sprintf("rollout %+v", *s.status.Rollout))
	}
	for _, m := range members {
		desc := m + ": "
		if e, ok := s.entries[m]; ok {
			desc += fmt.Sprintf("entry %s at %s/%s target %d version %s", e.State, e.TemplateVersion, e.OverrideVersion, e.TargetRevision, e.Version)
		} else {
			desc += "no entry"
		}
		if cp := s.copies[m]; cp != nil {
			desc += fmt.Sprintf(", copy resourceVersion %s replicas %d image %s template-version %s", cp.ResourceVersion, replicasOf(cp), imageOf(cp), cp.Annotations[typesv1beta1.AnnotationTemplateVersion])
		} else {
			desc += ", no copy"
		}
		parts = append(parts, desc)
	}
	return strings.Join(parts, "; ")
}

func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return -1
	}
	return *d.Spec.Replicas
}

func imageOf(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}
