package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
)

// diffText is the unified diff from the live copy to the one that would be
// written, as fedwarden diff shows copies (memberdiff.Compare: the live
// copy pruned to the fields Fedwarden sets, the fields the drift policy
// ignores left out, a Secret's values redacted), but in the direction of
// the change: --- live, +++ planned. "" when they do not differ.
func diffText(in *planInput, cluster string, write, live *unstructured.Unstructured, policy drift.Policy) (string, error) {
	desired := write.DeepCopy()
	annotations := desired.GetAnnotations()
	delete(annotations, typesv1beta1.AnnotationDesiredHash)
	delete(annotations, typesv1beta1.AnnotationOwnerUID)
	desired.SetAnnotations(annotations)
	location := cluster + "/" + cache.NewObjectName(desired.GetNamespace(), desired.GetName()).String()
	v, err := memberdiff.Compare(memberdiff.Input{
		Location: location, Desired: desired, Live: live, Policy: policy,
		Versions: memberdiff.Versions{Template: string(in.Versions.Template), Override: string(in.Versions.Override)},
		Redact:   memberdiff.IsSecret(in.s.kind.Type.Target),
	})
	if err != nil || !v.Differs() {
		return "", err
	}
	return memberdiff.Unified(v.Live, v.Desired, "live "+location, "planned "+location)
}
