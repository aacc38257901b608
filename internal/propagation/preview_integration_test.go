package propagation_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/inprocess"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
)

// TestAPreviewWritesNothing runs the apply stage as fedwarden plan does
// (Previewer) on a real member: a changed template is decided an Update
// and dry-run, a copy whose namespace the member lacks is not judged and
// the namespace is not created, the removal of the copy is dry-run as a
// delete, and that of a namespace Fedwarden adopted as a release. The
// member's objects keep their resourceVersions, labels and annotations
// throughout: the preview's every write carries dryRun=All.
func TestAPreviewWritesNothing(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ctx := t.Context()
	ns := tb.Namespace(t, "preview")
	tb.create(t, federatedDeployment(t, ns, "web", "nginx:1.27", []string{member1}, nil))
	cpv := tb.waitForCPV(t, ns, "web", "1", "1", member1)
	copyBefore := tb.deployment(t, member1, ns, "web")

	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := tb.Host.Get(ctx, client.ObjectKey{Name: "deployments.apps"}, ftc); err != nil {
		t.Fatal(err)
	}
	fc := &corev1beta1.FederatedCluster{}
	if err := tb.Host.Get(ctx, client.ObjectKey{Namespace: inprocess.ControlPlaneNamespace, Name: member1}, fc); err != nil {
		t.Fatal(err)
	}
	member, err := clustercache.NewMember(ctx, member1, tb.Fed.Member(member1).Config)
	if err != nil {
		t.Fatal(err)
	}
	typ := propagation.TypeFromConfig(ftc)
	pv := propagation.Previewer{Type: typ, DefaultRemediation: typesv1beta1.RemediationEnforce}

	fed := &unstructured.Unstructured{}
	fed.SetGroupVersionKind(typ.Federated)
	if err := tb.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, fed); err != nil {
		t.Fatal(err)
	}
	changed := fed.DeepCopy()
	containers := []any{map[string]any{"name": "web", "image": "nginx:1.28"}}
	if err := unstructured.SetNestedSlice(changed.Object, containers, "spec", "template", "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}

	t.Run("a changed template", func(t *testing.T) {
		got := preview(t, pv, member, fc, changed, cpv)
		image, _, _ := unstructured.NestedSlice(got.Sent.Object, "spec", "template", "spec", "containers")
		if !got.Decided || got.Decision.Action != propagation.ActionUpdate || got.Message != "" || len(image) != 1 || image[0].(map[string]any)["image"] != "nginx:1.28" {
			t.Errorf("preview: decided %v, %+v, message %q, sent containers %v; want an Update to nginx:1.28 the member allows", got.Decided, got.Decision, got.Message, image)
		}
		checkUntouched(t, tb, member1, copyBefore)
	})

	t.Run("a namespace the member lacks", func(t *testing.T) {
		elsewhere := changed.DeepCopy()
		elsewhere.SetNamespace("preview-nowhere")
		got := preview(t, pv, member, fc, elsewhere, &typesv1beta1.ClusterPropagatedVersion{})
		if !got.Decided || got.Decision.Action != propagation.ActionCreate || !got.NamespaceMissing {
			t.Errorf("preview: decided %v, %+v, namespace missing %v; want a Create not judged", got.Decided, got.Decision, got.NamespaceMissing)
		}
		err := tb.Members[member1].Get(ctx, client.ObjectKey{Name: "preview-nowhere"}, &corev1.Namespace{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("the preview created namespace preview-nowhere in %s (or it could not be read): %v", member1, err)
		}
	})

	t.Run("the removal of the copy", func(t *testing.T) {
		got := pv.Removal(ctx, member, fc, fed, cpv)
		if got.Removal != "delete" || got.Message != "" {
			t.Errorf("removal preview: %q, message %q; want a delete the member allows", got.Removal, got.Message)
		}
		checkUntouched(t, tb, member1, copyBefore)
	})

	t.Run("the removal of an adopted namespace", func(t *testing.T) {
		uid := types.UID("preview-owner")
		adopted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "preview-adopted-",
			Labels:      map[string]string{typesv1beta1.LabelManaged: "true"},
			Annotations: map[string]string{typesv1beta1.AnnotationOwnerUID: string(uid)}}}
		if err := tb.Members[member1].Create(ctx, adopted); err != nil {
			t.Fatal(err)
		}
		fedNS := &unstructured.Unstructured{}
		fedNS.SetGroupVersionKind(namespacesType.Federated)
		fedNS.SetNamespace(adopted.Name)
		fedNS.SetName(adopted.Name)
		fedNS.SetUID(uid)
		got := propagation.Previewer{Type: namespacesType}.Removal(ctx, member, fc, fedNS, &typesv1beta1.ClusterPropagatedVersion{})
		if got.Removal != "release" || got.Message != "" {
			t.Errorf("removal preview: %q, message %q; want a release the member allows", got.Removal, got.Message)
		}
		after := &corev1.Namespace{}
		if err := tb.Members[member1].Get(ctx, client.ObjectKeyFromObject(adopted), after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != adopted.ResourceVersion || after.Labels[typesv1beta1.LabelManaged] != "true" {
			t.Errorf("the adopted namespace was written: resourceVersion %s → %s, labels %v", adopted.ResourceVersion, after.ResourceVersion, after.Labels)
		}
	})
}

// namespacesType is the type of FederatedNamespaces, which the bed does
// not enable: a removal preview only reads and dry-runs the member.
var namespacesType = propagation.Type{
	Name:                "namespaces",
	Federated:           typesv1beta1.GroupVersion.WithKind("FederatedNamespace"),
	Target:              corev1.SchemeGroupVersion.WithKind("Namespace"),
	TargetResource:      corev1.SchemeGroupVersion.WithResource("namespaces"),
	FederatedNamespaced: true,
}

// preview previews the sync of fed, placed on member-1 alone, whose CPV
// is cpv.
func preview(t *testing.T, pv propagation.Previewer, member *clustercache.Member, fc *corev1beta1.FederatedCluster, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion) propagation.Preview {
	t.Helper()
	spec, err := render.ParseSpec(fed)
	if err != nil {
		t.Fatal(err)
	}
	return pv.Sync(t.Context(), member, fc, fed, spec, propagation.InputsOf(fed, spec, cpv, nil), propagation.Placement{})
}
