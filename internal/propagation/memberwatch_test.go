package propagation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func TestKeepOthersFieldsDropsOnlyWhatDriftDetectionSkips(t *testing.T) {
	fields := metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)
	copyOf := &unstructured.Unstructured{}
	copyOf.SetName("web")
	copyOf.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: fields},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: fields},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: fields},
		{Manager: "kubectl-scale", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "scale", FieldsV1: fields},
	})

	out, err := keepOthersFields(copyOf)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range out.(*unstructured.Unstructured).GetManagedFields() {
		kept = append(kept, e.Manager+"/"+e.Subresource)
	}
	if len(kept) != 2 || kept[0] != "kubectl-edit/" || kept[1] != "kubectl-scale/scale" {
		t.Errorf("kept managers %v, want [kubectl-edit/ kubectl-scale/scale]", kept)
	}

	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/web"}
	if out, err := keepOthersFields(tombstone); err != nil || out != tombstone {
		t.Errorf("a tombstone came back as %v, %v", out, err)
	}
}
