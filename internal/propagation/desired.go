package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/render"
)

// Desired returns the copy of fed that cluster should have: the template
// with the cluster's overrides applied and, when the scheduler divides
// them, its replicas (which win over both), labelled as managed. The
// version annotations a write adds are not in it. See render.Desired.
func Desired(typ Type, fed *unstructured.Unstructured, cluster string, replicas *int32) (*unstructured.Unstructured, error) {
	return render.Desired(typ.renderTarget(), fed, cluster, replicas)
}
