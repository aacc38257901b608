package drift

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
)

// Entry is one member copy that is not in sync: a line of the table, an
// item of -o json and -o yaml.
type Entry struct {
	// Namespace of the federated resource; empty for a cluster-scoped one.
	Namespace string `json:"namespace"`
	// Kind of the federated resource, for example FederatedDeployment.
	Kind string `json:"kind"`
	// Name of the federated resource.
	Name string `json:"name"`
	// Cluster is the member cluster.
	Cluster string `json:"cluster"`
	// State is how the copy drifted.
	State typesv1beta1.DriftState `json:"state"`
	// DriftedSince is when the copy left InSync; null when unknown.
	DriftedSince *metav1.Time `json:"driftedSince"`
	// ChangedPaths are the JSON pointers of the fields changed out of band.
	ChangedPaths []string `json:"changedPaths"`
	// ChangedBy are the field managers that changed them.
	ChangedBy []string `json:"changedBy"`
	// Remediation in effect: Enforce or Alert.
	Remediation typesv1beta1.Remediation `json:"remediation"`
	// Message is the controller's message.
	Message string `json:"message"`
}

// resource names the federated resource as the table does:
// federateddeployment/web.
func (e Entry) resource() string {
	if e.Kind == "" {
		return e.Name
	}
	return strings.ToLower(e.Kind) + "/" + e.Name
}

// entries returns the cluster entries of cpvs that are not in sync, sorted
// by namespace, resource and cluster. An entry without a state has not
// been classified: it is left out.
func entries(cpvs []typesv1beta1.ClusterPropagatedVersion, cluster federatedtype.Scopes) []Entry {
	out := []Entry{}
	for _, cpv := range cpvs {
		namespace := cpv.Namespace
		if cluster.Has(cpv.Spec) {
			namespace = ""
		}
		for _, cv := range cpv.Status.ClusterVersions {
			if cv.State == "" || cv.State == typesv1beta1.InSync || cv.State == typesv1beta1.RolloutPending {
				continue
			}
			out = append(out, Entry{
				Namespace:    namespace,
				Kind:         cpv.Spec.TemplateKind,
				Name:         cpv.Spec.Template,
				Cluster:      string(cv.ClusterName),
				State:        cv.State,
				DriftedSince: cv.DriftedSince,
				ChangedPaths: orEmpty(cv.ChangedPaths),
				ChangedBy:    orEmpty(cv.ChangedBy),
				Remediation:  cv.Remediation,
				Message:      cv.Message,
			})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.resource(), b.resource()), cmp.Compare(a.Cluster, b.Cluster))
	})
	return out
}

// orEmpty returns s, or an empty list for nil, so that JSON shows [].
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
