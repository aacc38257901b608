package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/dependencies"
)

// Resource is the resource page.
type Resource struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Group     string `json:"group"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// CPV is the name of its ClusterPropagatedVersion, in Namespace.
	CPV string `json:"cpv"`
	// TemplateVersion and OverrideVersion are the host's.
	TemplateVersion string `json:"templateVersion"`
	OverrideVersion string `json:"overrideVersion"`
	// Resync is the kubefed.io/resync value last acted on
	// (status.resync), Requested the annotation's value now.
	Resync    string `json:"resync,omitempty"`
	Requested string `json:"requested,omitempty"`
	// Clusters are the copies, by cluster.
	Clusters []Copy `json:"clusters"`
	// Ledger is every episode of every copy, newest first: the open ones
	// (from driftedSince until now) and the ended ones.
	Ledger []Episode `json:"ledger"`
	// ResyncAllowed says whether the user may set kubefed.io/resync on the
	// federated resource (patch), and ResyncDenied why not.
	ResyncAllowed bool   `json:"resyncAllowed"`
	ResyncDenied  string `json:"resyncDenied,omitempty"`
	// Dependencies are the resources that go with this one as its
	// dependencies (spec.propagateDependencies): each with its copies.
	Dependencies []Dependency `json:"dependencies"`
	// DependencyOf names, for a dependency, the workloads it goes with,
	// as Kind/name.
	DependencyOf []string `json:"dependencyOf,omitempty"`
	// Problems say what could not be read.
	Problems []string `json:"problems,omitempty"`
}

// Dependency is one dependency of a workload, with its own copies.
type Dependency struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Clusters []Copy `json:"clusters"`
}

// Copy is one cluster's copy, as its CPV entry records it.
type Copy struct {
	Cluster string               `json:"cluster"`
	Mode    corev1beta1.SyncMode `json:"mode,omitempty"`
	// Placed: the cluster is in spec.clusters.
	Placed             bool                     `json:"placed"`
	State              string                   `json:"state"`
	TemplateVersion    string                   `json:"templateVersion,omitempty"`
	OverrideVersion    string                   `json:"overrideVersion,omitempty"`
	Version            string                   `json:"version,omitempty"`
	ObservedGeneration int64                    `json:"observedGeneration,omitempty"`
	ChangedPaths       []string                 `json:"changedPaths,omitempty"`
	ChangedBy          []string                 `json:"changedBy,omitempty"`
	DriftedSince       *metav1.Time             `json:"driftedSince,omitempty"`
	Remediation        typesv1beta1.Remediation `json:"remediation,omitempty"`
	Message            string                   `json:"message,omitempty"`
	Resync             string                   `json:"resync,omitempty"`
}

// federatedKind is what addressing a federated resource takes.
type federatedKind struct {
	gvk schema.GroupVersionKind
	// resource is its plural.
	resource   string
	namespaced bool
}

// key is the federated resource's key: no namespace for a cluster-scoped
// kind.
func (k federatedKind) key(r *row) client.ObjectKey {
	if k.namespaced {
		return client.ObjectKey{Namespace: r.namespace, Name: r.name}
	}
	return client.ObjectKey{Name: r.name}
}

// describe names it as kubectl does: federateddeployments.types.kubefed.io "web".
func (k federatedKind) describe(r *row) string {
	return fmt.Sprintf("%s.%s %q", k.resource, k.gvk.Group, r.name)
}

// findRow returns the row the query's kind, namespace and name name.
func (s *Server) findRow(w http.ResponseWriter, r *http.Request, v *view) *row {
	v.wait(r.Context(), firstListWait)
	q := r.URL.Query()
	kind, name := q.Get("kind"), q.Get("name")
	if kind == "" || name == "" {
		writeError(w, http.StatusBadRequest, "kind and name are required: ?kind=FederatedDeployment&namespace=shop&name=web")
		return nil
	}
	found := v.ix.lookup(kind, q.Get("namespace"), name, s.opts.ControlPlaneNamespace)
	if found == nil {
		msg := fmt.Sprintf("no ClusterPropagatedVersion tracks %s %s in namespace %q", kind, name, q.Get("namespace"))
		if p := v.problems(v.cpvs); len(p) > 0 {
			msg += ": " + strings.Join(p, "; ")
		}
		writeError(w, http.StatusNotFound, msg)
		return nil
	}
	return found
}

// kindOf maps the resource's kind with the host's discovery, as the user.
func kindOf(v *view, r *row) (federatedKind, error) {
	gv, err := schema.ParseGroupVersion(r.cpv.Spec.TemplateAPIVersion)
	if err != nil || r.cpv.Spec.TemplateAPIVersion == "" {
		gv = typesv1beta1.GroupVersion
	}
	mapping, err := v.client.RESTMapper().RESTMapping(schema.GroupKind{Group: gv.Group, Kind: r.kind}, gv.Version)
	if err != nil {
		return federatedKind{}, fmt.Errorf("finding the kind %s: %w", r.kind, err)
	}
	return federatedKind{gvk: mapping.GroupVersionKind, resource: mapping.Resource.Resource, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, v *view) {
	found := s.findRow(w, r, v)
	if found == nil {
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	out := s.resourcePage(v, found)
	kind, err := kindOf(v, found)
	if err != nil {
		out.Problems = append(out.Problems, err.Error())
		out.ResyncDenied = err.Error()
		writeJSON(w, http.StatusOK, out)
		return
	}
	fed := &unstructured.Unstructured{}
	fed.SetGroupVersionKind(kind.gvk)
	if err := v.client.Get(ctx, kind.key(found), fed); err != nil {
		out.Problems = append(out.Problems, "reading "+kind.describe(found)+": "+err.Error())
	} else {
		out.Requested = fed.GetAnnotations()[typesv1beta1.AnnotationResync]
	}
	out.ResyncAllowed, out.ResyncDenied = mayPatch(ctx, v, kind, found)
	writeJSON(w, http.StatusOK, out)
}

// resourcePage is what the cache says of a resource.
func (s *Server) resourcePage(v *view, r *row) Resource {
	cpv := r.cpv
	out := Resource{
		ID: r.id, Kind: r.kind, Group: r.group, Namespace: r.namespace, Name: r.name, CPV: cpv.Name,
		TemplateVersion: string(cpv.Status.TemplateVersion), OverrideVersion: string(cpv.Status.OverrideVersion), Resync: cpv.Status.Resync,
		Ledger: ledger(r), DependencyOf: cpv.Spec.DependencyOf,
	}
	v.ix.mu.RLock()
	defer v.ix.mu.RUnlock()
	out.Clusters = copiesOf(v, r)
	out.Dependencies = dependenciesOf(v, r)
	return out
}

// dependenciesOf are the rows whose CPV names r's resource among the
// workloads it goes with, sorted; v.ix.mu is held.
func dependenciesOf(v *view, r *row) []Dependency {
	me := dependencies.OwnerName(r.kind, r.name)
	out := []Dependency{}
	for _, d := range v.ix.rows {
		if d.namespace == r.namespace && slices.Contains(d.cpv.Spec.DependencyOf, me) {
			out = append(out, Dependency{ID: d.id, Kind: d.kind, Name: d.name, Clusters: copiesOf(v, d)})
		}
	}
	slices.SortFunc(out, func(a, b Dependency) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// copiesOf are r's copies, by cluster; v.ix.mu is held.
func copiesOf(v *view, r *row) []Copy {
	cpv := r.cpv
	out := []Copy{}
	for _, c := range r.cells {
		cp := Copy{Cluster: c.cluster, State: v.ix.state(c), Placed: slices.ContainsFunc(cpv.Spec.Clusters, func(pc typesv1beta1.PlacedCluster) bool {
			return string(pc.Name) == c.cluster
		})}
		if fc, ok := v.ix.clusters[c.cluster]; ok {
			cp.Mode = fc.Spec.SyncMode
		}
		if e := c.entry; e != nil {
			cp.TemplateVersion, cp.OverrideVersion, cp.Version, cp.ObservedGeneration = string(e.TemplateVersion), string(e.OverrideVersion), e.Version, e.ObservedGeneration
			cp.ChangedPaths, cp.ChangedBy, cp.DriftedSince, cp.Remediation, cp.Message, cp.Resync = e.ChangedPaths, e.ChangedBy, e.DriftedSince, e.Remediation, e.Message, e.Resync
		}
		out = append(out, cp)
	}
	return out
}

// mayPatch asks the host whether the user may patch the federated
// resource (a SelfSubjectAccessReview, as the user), and if not, why.
func mayPatch(ctx context.Context, v *view, kind federatedKind, r *row) (bool, string) {
	key := kind.key(r)
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: key.Namespace, Verb: "patch", Group: kind.gvk.Group, Resource: kind.resource, Name: key.Name,
		},
	}}
	if err := v.client.Create(ctx, review); err != nil {
		return false, "could not ask the host whether you may resync: " + err.Error()
	}
	if review.Status.Allowed {
		return true, ""
	}
	where := ""
	if key.Namespace != "" {
		where = " in namespace " + key.Namespace
	}
	msg := fmt.Sprintf("you may not patch %s%s, which Resync does (it sets the annotation %s)", kind.describe(r), where, typesv1beta1.AnnotationResync)
	if reason := strings.TrimSpace(review.Status.Reason + " " + review.Status.EvaluationError); reason != "" {
		msg += ": " + reason
	}
	return false, msg
}

// apiMessage is the API server's own words for a refusal.
func apiMessage(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
