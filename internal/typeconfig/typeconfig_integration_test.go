package typeconfig_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/disable"
	"github.com/fedwarden/fedwarden/internal/cli/enable"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/inprocess"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/typeconfig"
	"github.com/fedwarden/fedwarden/test/poll"
)

// The tests of this file run the federation controller (typeconfig) in
// this process, with the cluster health controller and the propagation
// controllers it starts, in an inprocess test bed: a host and one member of
// real kube-apiservers, which they share. Each test enables its own type.
const member = "member-1"

// Bounds of the waits. A type not served is looked at again every 3 s;
// a sync takes well under a second on an idle machine; the bounds leave
// room for a starved one.
const within = 30 * time.Second

// TestATypeEnabledAtRunTimeStartsItsController enables ConfigMaps while the
// controllers run, as `fedwarden enable configmaps` does: the
// FederatedTypeConfig gets the release finalizer and says its controller is
// Running, and a FederatedConfigMap created then reaches the member.
func TestATypeEnabledAtRunTimeStartsItsController(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	tb.enable(t, "configmaps")
	ftc := tb.waitForTypeConfig(t, "configmaps", corev1beta1.ControllerStatusRunning, metav1.ConditionTrue, corev1beta1.ReasonControllerRunning)
	if !slices.Contains(ftc.Finalizers, typeconfig.FinalizerRelease) {
		t.Errorf("FederatedTypeConfig configmaps: finalizers %v, want %s", ftc.Finalizers, typeconfig.FinalizerRelease)
	}
	if c := meta.FindStatusCondition(ftc.Status.Conditions, corev1beta1.TypeConfigEstablished); c.Message != "propagating FederatedConfigMap to member clusters as ConfigMap" {
		t.Errorf("Established message %q", c.Message)
	}

	ns := tb.Namespace(t, "enabled")
	tb.create(t, federated(t, "FederatedConfigMap", ns, "settings", `{data: {colour: blue}}`, member))
	poll.Eventually(t, within, "the ConfigMap in "+member, func(ctx context.Context) (bool, string) {
		cm := &corev1.ConfigMap{}
		if err := tb.Members[member].Get(ctx, types.NamespacedName{Namespace: ns, Name: "settings"}, cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["colour"] == "blue" && cm.Labels[typesv1beta1.LabelManaged] == "true", fmt.Sprintf("data %v, labels %v", cm.Data, cm.Labels)
	})
	tb.waitForInSync(t, ns, "configmap-settings", "1")
}

// TestDisablingATypeStopsItsController disables FederatedDeployments, as
// `fedwarden disable deployments.apps` does: the FederatedTypeConfig says
// its controller is NotRunning because propagation is Disabled, the
// resources lose the sync finalizer so that they can still be deleted, a
// template change is not propagated and a deleted resource's copy stays.
// Enabled again, the controller runs and the change is propagated.
func TestDisablingATypeStopsItsController(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	tb.enable(t, "deployments.apps")
	tb.waitForTypeConfig(t, "deployments.apps", corev1beta1.ControllerStatusRunning, metav1.ConditionTrue, corev1beta1.ReasonControllerRunning)
	ns := tb.Namespace(t, "disabled")
	kept := federated(t, "FederatedDeployment", ns, "kept", deploymentSpec("kept", "nginx:1.27"), member)
	deleted := federated(t, "FederatedDeployment", ns, "deleted", deploymentSpec("deleted", "nginx:1.27"), member)
	for _, fd := range []*unstructured.Unstructured{kept, deleted} {
		tb.create(t, fd)
		tb.waitForInSync(t, ns, "deployment-"+fd.GetName(), "1")
	}
	left := tb.deployment(t, ns, "deleted")

	if _, stderr, code := clitest.Execute(disable.NewCommand, "deployments.apps", "--host-kubeconfig", tb.Fed.Host.Kubeconfig); code != 0 {
		t.Fatalf("fedwarden disable deployments.apps: exit code %d:\n%s", code, stderr)
	}
	ftc := tb.waitForTypeConfig(t, "deployments.apps", corev1beta1.ControllerStatusNotRunning, metav1.ConditionFalse, corev1beta1.ReasonPropagationDisabled)
	if c := meta.FindStatusCondition(ftc.Status.Conditions, corev1beta1.TypeConfigEstablished); !strings.Contains(c.Message, "member copies are left as they are") {
		t.Errorf("Established message %q", c.Message)
	}
	for _, fd := range []*unstructured.Unstructured{kept, deleted} {
		poll.Eventually(t, within, fd.GetName()+" to lose the sync finalizer", func(ctx context.Context) (bool, string) {
			live := fd.DeepCopy()
			if err := tb.Host.Get(ctx, client.ObjectKeyFromObject(fd), live); err != nil {
				return false, err.Error()
			}
			return !slices.Contains(live.GetFinalizers(), typesv1beta1.FinalizerSync), fmt.Sprintf("finalizers %v", live.GetFinalizers())
		})
	}
	before := tb.deployment(t, ns, "kept")
	tb.patch(t, kept, `{"spec":{"template":{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.29"}]}}}}}}`)
	if err := tb.Host.Delete(t.Context(), deleted); err != nil {
		t.Fatal(err)
	}
	tb.waitForAbsent(t, deleted)
	// A stopped controller shows nothing to wait for: the copy is watched
	// for 5 s, many times what a running controller takes to write a change
	// (well under a second), so that one still running fails here.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if d := tb.deployment(t, ns, "kept"); d.ResourceVersion != before.ResourceVersion {
			t.Fatalf("the copy of kept was written while deployments.apps is disabled: image %s", d.Spec.Template.Spec.Containers[0].Image)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if d := tb.deployment(t, ns, "deleted"); d.UID != left.UID {
		t.Errorf("the copy of deleted was replaced (UID %s → %s)", left.UID, d.UID)
	}

	tb.enable(t, "deployments.apps")
	tb.waitForTypeConfig(t, "deployments.apps", corev1beta1.ControllerStatusRunning, metav1.ConditionTrue, corev1beta1.ReasonControllerRunning)
	tb.waitForInSync(t, ns, "deployment-kept", "2")
	if img := tb.deployment(t, ns, "kept").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.29" {
		t.Errorf("kept's copy has image %s once enabled again, want nginx:1.29", img)
	}
	if d := tb.deployment(t, ns, "deleted"); d.UID != left.UID || d.DeletionTimestamp != nil {
		t.Errorf("the copy of a resource deleted while its type was disabled was touched once enabled again: UID %s → %s, deletionTimestamp %v", left.UID, d.UID, d.DeletionTimestamp)
	}
}

// TestATypeTheHostDoesNotServeIsReportedUntilItIsServed creates the
// FederatedTypeConfig of Gizmos before the CRD of FederatedGizmo exists:
// it says NotRunning, TypeNotServed, naming the kind and how to install it.
// `fedwarden enable` then installs the CRD, and the controller starts
// without a restart.
func TestATypeTheHostDoesNotServeIsReportedUntilItIsServed(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	tb.createGizmoCRD(t)
	var stdout string
	poll.Eventually(t, within, "enable gizmos.example.com -o yaml", func(context.Context) (bool, string) {
		out, stderr, code := clitest.Execute(enable.NewCommand, "gizmos.example.com", "-o", "yaml", "--host-kubeconfig", tb.Fed.Host.Kubeconfig)
		stdout = out
		return code == 0, stderr
	})
	ftc := typeConfigIn(t, stdout)
	if err := tb.Host.Create(t.Context(), ftc); err != nil {
		t.Fatal(err)
	}
	ftc = tb.waitForTypeConfig(t, ftc.Name, corev1beta1.ControllerStatusNotRunning, metav1.ConditionFalse, corev1beta1.ReasonTypeNotServed)
	msg := meta.FindStatusCondition(ftc.Status.Conditions, corev1beta1.TypeConfigEstablished).Message
	for _, want := range []string{"the host does not serve types.kubefed.io/v1beta1, Kind=FederatedGizmo", "'fedwarden enable' installs it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Established message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "Kind=Gizmo") {
		t.Errorf("Established message %q says the target kind, which the host serves, is not served", msg)
	}

	tb.enable(t, "gizmos.example.com")
	tb.waitForTypeConfig(t, ftc.Name, corev1beta1.ControllerStatusRunning, metav1.ConditionTrue, corev1beta1.ReasonControllerRunning)
}

// bed is the test bed the tests of this file share.
type bed struct{ *inprocess.Bed }

var shared = inprocess.Shared{
	Name:       "typeconfig",
	Federation: []localfed.Option{localfed.WithMemberNames(member)},
	Setup:      setUp,
}

// testBed returns the shared test bed, started by the first test that asks
// for it.
func testBed(t *testing.T) bed { return bed{shared.Bed(t)} }

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

// setUp starts the federation controller and joins the member. No type is
// enabled.
func setUp(_ context.Context, b *inprocess.Bed) error {
	if err := b.StartManager(func(mgr ctrl.Manager, members *clustercache.Cache) error {
		opts := propagation.DefaultOptions()
		opts.Namespace = inprocess.ControlPlaneNamespace
		return typeconfig.NewReconciler(mgr, members, opts).SetupWithManager(mgr)
	}); err != nil {
		return err
	}
	return b.Join()
}

// enable runs `fedwarden enable resource`.
func (tb bed) enable(t *testing.T, resource string) {
	t.Helper()
	if _, stderr, code := clitest.Execute(enable.NewCommand, resource, "--host-kubeconfig", tb.Fed.Host.Kubeconfig); code != 0 {
		t.Fatalf("fedwarden enable %s: exit code %d:\n%s", resource, code, stderr)
	}
}

// waitForTypeConfig waits until the FederatedTypeConfig's status, for its
// generation, says controller and its Established condition has status and
// reason; it returns the FederatedTypeConfig.
func (tb bed) waitForTypeConfig(t *testing.T, name string, controller corev1beta1.ControllerStatus, status metav1.ConditionStatus, reason string) *corev1beta1.FederatedTypeConfig {
	t.Helper()
	ftc := &corev1beta1.FederatedTypeConfig{}
	poll.Eventually(t, within, fmt.Sprintf("FederatedTypeConfig %s: %s, Established %s (%s)", name, controller, status, reason), func(ctx context.Context) (bool, string) {
		if err := tb.Host.Get(ctx, client.ObjectKey{Name: name}, ftc); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(ftc.Status.Conditions, corev1beta1.TypeConfigEstablished)
		return ftc.Status.ObservedGeneration == ftc.Generation && ftc.Status.PropagationController == controller &&
			c != nil && c.Status == status && c.Reason == reason, fmt.Sprintf("generation %d, status %+v", ftc.Generation, ftc.Status)
	})
	return ftc
}

// createGizmoCRD installs a namespaced kind Gizmo of example.com in the
// host, and waits until it is Established.
func (tb bed) createGizmoCRD(t *testing.T) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: new(true)},
					},
				}},
			}},
		},
	}
	if err := tb.Host.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, within, "CustomResourceDefinition gizmos.example.com to be Established", func(ctx context.Context) (bool, string) {
		if err := tb.Host.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, err.Error()
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", crd.Status.Conditions)
	})
}

// typeConfigIn returns the FederatedTypeConfig of the manifests `enable -o
// yaml` printed.
func typeConfigIn(t *testing.T, manifests string) *corev1beta1.FederatedTypeConfig {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			t.Fatalf("no FederatedTypeConfig in:\n%s\n(%v)", manifests, err)
		}
		if u.GetKind() != "FederatedTypeConfig" {
			continue
		}
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ftc); err != nil {
			t.Fatal(err)
		}
		return ftc
	}
}

// federated returns a federated resource of kind with the template spec
// (YAML), placed on clusters.
func federated(t *testing.T, kind, namespace, name, template string, clusters ...string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("types.kubefed.io/v1beta1")
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	tmpl := map[string]any{}
	if err := yaml.Unmarshal([]byte(template), &tmpl); err != nil {
		t.Fatal(err)
	}
	placement := make([]any, 0, len(clusters))
	for _, c := range clusters {
		placement = append(placement, map[string]any{"name": c})
	}
	u.Object["spec"] = map[string]any{"template": tmpl, "placement": map[string]any{"clusters": placement}}
	return u
}

func deploymentSpec(name, image string) string {
	return fmt.Sprintf(`{spec: {replicas: 1, selector: {matchLabels: {app: %[1]s}}, template: {metadata: {labels: {app: %[1]s}}, spec: {containers: [{name: web, image: %[2]q}]}}}}`, name, image)
}

// create creates a federated resource.
func (tb bed) create(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if err := tb.Host.Create(t.Context(), obj.DeepCopy()); err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// patch changes a federated resource as `kubectl patch --type merge` would.
func (tb bed) patch(t *testing.T, obj *unstructured.Unstructured, patch string) {
	t.Helper()
	if err := tb.Host.Patch(t.Context(), obj.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching %s: %v", obj.GetName(), err)
	}
}

// waitForInSync waits until the CPV name records the member InSync at
// template version templateVersion.
func (tb bed) waitForInSync(t *testing.T, namespace, name string, templateVersion typesv1beta1.Version) {
	t.Helper()
	poll.Eventually(t, within, fmt.Sprintf("CPV %s/%s: %s InSync at template version %s", namespace, name, member, templateVersion), func(ctx context.Context) (bool, string) {
		cpv := &typesv1beta1.ClusterPropagatedVersion{}
		if err := tb.Host.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cpv); err != nil {
			return false, err.Error()
		}
		for _, cv := range cpv.Status.ClusterVersions {
			if string(cv.ClusterName) == member && cv.State == typesv1beta1.InSync && cv.TemplateVersion == templateVersion {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", cpv.Status)
	})
}

// deployment returns the member's copy of a FederatedDeployment.
func (tb bed) deployment(t *testing.T, namespace, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := tb.Members[member].Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatalf("%s: reading Deployment %s/%s: %v", member, namespace, name, err)
	}
	return d
}

// waitForAbsent waits until obj is gone from the host.
func (tb bed) waitForAbsent(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	poll.Eventually(t, within, obj.GetName()+" to be gone from the host", func(ctx context.Context) (bool, string) {
		err := tb.Host.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy())
		return apierrors.IsNotFound(err), fmt.Sprintf("still there (%v)", err)
	})
}
