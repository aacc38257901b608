package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/migrate"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// kubefedKinds are the kinds of KubeFed's sample1 that KubeFed propagates
// in the migration test (the sample's Job and Ingress are left out).
var kubefedKinds = []string{"namespaces", "configmaps", "secrets", "services", "serviceaccounts", "deployments.apps",
	"clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io"}

// copyRef names a member copy of sample1.
type copyRef struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
	cpv       string // namespace/name of its ClusterPropagatedVersion
}

// sampleCopies are the member copies of sample1 that KubeFed places.
func sampleCopies() []copyRef {
	const ns = "test-namespace"
	v1 := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Version: "v1", Resource: r}
	}
	rbac := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: r}
	}
	return []copyRef{
		{v1("namespaces"), "", ns, ns + "/namespace-" + ns},
		{v1("configmaps"), ns, "test-configmap", ns + "/configmap-test-configmap"},
		{v1("secrets"), ns, "test-secret", ns + "/secret-test-secret"},
		{v1("services"), ns, "test-service", ns + "/service-test-service"},
		{v1("serviceaccounts"), ns, "test-serviceaccount", ns + "/serviceaccount-test-serviceaccount"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, "test-deployment", ns + "/deployment-test-deployment"},
		{rbac("clusterroles"), "", "test-clusterrole", fedtest.KubeFedNamespace + "/clusterrole-test-clusterrole"},
		{rbac("clusterrolebindings"), "", "test-clusterrolebinding", fedtest.KubeFedNamespace + "/clusterrolebinding-test-clusterrolebinding"},
	}
}

// A host where KubeFed v0.10.0 placed sample1 moves to Fedwarden with
// `fedwarden migrate kubefed`: the dry run changes nothing; the handover
// and Fedwarden's adoption write nothing to any member; every copy is
// InSync in its CPV but the one edited by hand before the migration, which
// is reported as drift and left alone (Alert); a template change then
// propagates through Fedwarden; --rollback gives KubeFed back a
// federation it drives.
func TestMigrateFromKubeFed(t *testing.T) {
	t.Parallel()
	skipInShortMode(t)
	k := startKubeFedBed(t)
	bed, tokens, dir, members, host := k.bed, k.tokens, k.dir, k.members, k.host

	// A cluster whose TLS verification KubeFed skips blocks the migration,
	// which then changes nothing.
	checkBlocked(t, bed)

	// The dry run: an inventory and a plan, and nothing changes.
	before := hostFingerprint(t, bed.Host.Config)
	plan := dryRun(t, bed, tokens)
	if diff := fingerprintDiff(before, hostFingerprint(t, bed.Host.Config)); diff != "" {
		t.Fatalf("the dry run changed the host: %s", diff)
	}

	// KubeFed stops (a process here, so the test ends it; in a cluster the
	// command scales its Deployment), and someone edits a copy by hand.
	k.stopKubeFed()
	kubectl(t, bed.Members[0].Kubeconfig, "-n", "test-namespace", "patch", "configmap", "test-configmap", "--type=merge", "-p", `{"data":{"A":"edited by hand"}}`)
	copiesBefore := memberFingerprints(t, members)

	r := runFedwarden(t, "migrate", "kubefed", "--host-kubeconfig", bed.Host.Kubeconfig, "--stop-timeout", "2m")
	if r.code != 0 {
		t.Fatalf("the migration failed:\n%s", r)
	}
	t.Logf("migrate kubefed:\n%s", r)
	digest := handoverDigest(t, r.stdout)
	checkNoMemberToken(t, "the migration", r.stdout+r.stderr, tokens)
	checkHandedOver(t, host)
	checkKubeFedReplicas(t, host, 0)

	cm := adoptingControllerManager(t, bed, dir, plan.ControllerManagerArgs)
	waitForAdoption(t, host, false)
	if diff := fingerprintDiff(copiesBefore, memberFingerprints(t, members)); diff != "" {
		t.Errorf("adopting KubeFed's copies wrote to the members: %s", diff)
	}
	waitForAdoption(t, host, true)
	checkHandEditKept(t, members[0])
	checkHandEditReported(t, host)
	t.Logf("kubectl get cpv -A:\n%s", kubectl(t, bed.Host.Kubeconfig, "get", "cpv", "-A"))
	if r := runFedwarden(t, "drift", "-A", "-o", "wide", "--host-kubeconfig", bed.Host.Kubeconfig); r.code != 0 || !strings.Contains(r.stdout, "ModifiedOutOfBand") {
		t.Errorf("fedwarden drift -A -o wide does not report the hand edit:\n%s", r)
	} else {
		t.Logf("fedwarden drift -A -o wide:\n%s", r.stdout)
	}

	// A template change propagates through Fedwarden.
	changeTemplate(t, bed, members)

	// Rollback: Fedwarden stops, KubeFed comes back and drives.
	if err := cm.stop(); err != nil {
		t.Error(err)
	}
	checkRollbackDryRun(t, bed, digest)
	r = runFedwarden(t, "migrate", "kubefed", "--rollback", "--state-digest", digest, "--host-kubeconfig", bed.Host.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("the rollback failed:\n%s", r)
	}
	t.Logf("migrate kubefed --rollback:\n%s", r)
	checkRolledBack(t, host)
	checkKubeFedReplicas(t, host, 1)
	k.startKubeFed(t)
	kubectl(t, bed.Host.Kubeconfig, "-n", "test-namespace", "patch", "federatedconfigmap", "test-configmap", "--type=merge", "-p", `{"spec":{"template":{"data":{"A":"from kubefed"}}}}`)
	mc := newClient(t, members[0])
	poll.Eventually(t, 2*time.Minute, "KubeFed, back, to propagate a template change to cluster1", func(ctx context.Context) (bool, string) {
		c := &corev1.ConfigMap{}
		if err := mc.Get(ctx, types.NamespacedName{Namespace: "test-namespace", Name: "test-configmap"}, c); err != nil {
			return false, err.Error()
		}
		return c.Data["A"] == "from kubefed", fmt.Sprint(c.Data)
	})
}

// handoverDigest returns the digest of the saved state that the handover
// printed, which --rollback asks for.
func handoverDigest(t *testing.T, stdout string) string {
	t.Helper()
	m := regexp.MustCompile(`--rollback --namespace \S+ --state-digest (sha256:[0-9a-f]{64})`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("the handover printed no digest of its state:\n%s", stdout)
	}
	return m[1]
}

// checkRollbackDryRun checks that --rollback --dry-run lists what the
// handover saved, with the digest the handover printed, and changes
// nothing.
func checkRollbackDryRun(t *testing.T, bed *localfed.Federation, digest string) {
	t.Helper()
	before := hostFingerprint(t, bed.Host.Config)
	r := runFedwarden(t, "migrate", "kubefed", "--rollback", "--dry-run", "--state-digest", digest, "--host-kubeconfig", bed.Host.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("migrate kubefed --rollback --dry-run failed:\n%s", r)
	}
	t.Logf("migrate kubefed --rollback --dry-run:\n%s", r)
	for _, want := range []string{"digest " + digest, "restore  CustomResourceDefinition federatedtypeconfigs.core.kubefed.io",
		"restore  FederatedTypeConfig " + fedtest.KubeFedNamespace + "/configmaps", "restore  ValidatingWebhookConfiguration validations.core.kubefed.io"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("migrate kubefed --rollback --dry-run does not print %q", want)
		}
	}
	if diff := fingerprintDiff(before, hostFingerprint(t, bed.Host.Config)); diff != "" {
		t.Errorf("migrate kubefed --rollback --dry-run changed the host: %s", diff)
	}
}

// applySample1 applies KubeFed's sample1, without its Job and Ingress.
func applySample1(t *testing.T, bed *localfed.Federation) {
	t.Helper()
	sample := filepath.Join(kubefedExamples, "sample1")
	kubectl(t, bed.Host.Kubeconfig, "apply", "-f", filepath.Join(sample, "namespace.yaml"))
	for _, kind := range []string{"namespace", "configmap", "secret", "service", "serviceaccount", "deployment", "clusterrole", "clusterrolebinding"} {
		kubectl(t, bed.Host.Kubeconfig, "apply", "-f", filepath.Join(sample, "federated"+kind+".yaml"))
	}
}

// waitForCopies waits until every member holds every copy of sample1.
func waitForCopies(t *testing.T, members []*rest.Config, what string) {
	t.Helper()
	for i, m := range members {
		dyn := dynamicClient(t, m)
		poll.Eventually(t, 2*time.Minute, fmt.Sprintf("%s (cluster%d)", what, i+1), func(ctx context.Context) (bool, string) {
			for _, c := range sampleCopies() {
				if _, err := copyResource(dyn, c).Get(ctx, c.name, metav1.GetOptions{}); err != nil {
					return false, err.Error()
				}
			}
			return true, ""
		})
	}
}

func dynamicClient(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func copyResource(dyn dynamic.Interface, c copyRef) dynamic.ResourceInterface {
	if c.namespace == "" {
		return dyn.Resource(c.gvr)
	}
	return dyn.Resource(c.gvr).Namespace(c.namespace)
}

// addKubeFedWebhook adds a webhook configuration named as KubeFed's chart
// names its own (the test runs no webhook server: it fails open).
func addKubeFedWebhook(t *testing.T, c client.Client) {
	t.Helper()
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:1/validate-kubefedconfig"
	w := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "validations.core.kubefed.io"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "kubefedconfigs.core.kubefed.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			AdmissionReviewVersions: []string{"v1beta1"},
			SideEffects:             &none,
			FailurePolicy:           &ignore,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"core.kubefed.io"}, APIVersions: []string{"v1beta1"}, Resources: []string{"kubefedconfigs"}},
			}},
		}},
	}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
}

// addKubeFedDeployment adds a Deployment named as KubeFed's chart names
// its controller-manager's, with one replica. Its pods never run (the host
// has no nodes): KubeFed runs as a process of the test, which the test
// stops; the migration scales the Deployment, and --rollback scales it
// back.
func addKubeFedDeployment(t *testing.T, c client.Client) {
	t.Helper()
	labels := map[string]string{"kubefed-control-plane": "controller-manager"}
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: migrate.ControllerDeployment, Namespace: fedtest.KubeFedNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "controller-manager", Image: "kubefed:v0.10.0"}}},
			},
		},
	}
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
}

// checkKubeFedReplicas checks the replicas of KubeFed's Deployment.
func checkKubeFedReplicas(t *testing.T, c client.Client, want int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: fedtest.KubeFedNamespace, Name: migrate.ControllerDeployment}, d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		t.Errorf("KubeFed's Deployment has %v replicas, want %d", d.Spec.Replicas, want)
	}
}

// checkBlocked makes KubeFed skip the TLS verification of cluster2, and
// checks that the dry run and the migration refuse to go on, with exit
// code 3 and the reason, and change nothing; then it undoes the setting.
func checkBlocked(t *testing.T, bed *localfed.Federation) {
	t.Helper()
	kubectl(t, bed.Host.Kubeconfig, "-n", fedtest.KubeFedNamespace, "patch", "kubefedcluster", "cluster2", "--type=merge", "-p", `{"spec":{"disabledTLSValidations":["*"]}}`)
	before := hostFingerprint(t, bed.Host.Config)
	const reason = "KubeFedCluster cluster2: spec.disabledTLSValidations [*]: Fedwarden never skips TLS verification"
	r := runFedwarden(t, "migrate", "kubefed", "--dry-run", "--host-kubeconfig", bed.Host.Kubeconfig)
	if r.code != 3 || !strings.Contains(r.stdout, "Blockers") || !strings.Contains(r.stdout, reason) {
		t.Errorf("the dry run of a blocked migration: want exit code 3 and %q, got\n%s", reason, r)
	}
	t.Logf("migrate kubefed --dry-run, blocked:\n%s", r.stderr)
	r = runFedwarden(t, "migrate", "kubefed", "--host-kubeconfig", bed.Host.Kubeconfig)
	if r.code != 3 || !strings.Contains(r.stderr, reason) || !strings.Contains(r.stderr, "nothing was changed") {
		t.Errorf("a blocked migration: want exit code 3 and %q, got\n%s", reason, r)
	}
	t.Logf("migrate kubefed, blocked:\n%s", r.stderr)
	if diff := fingerprintDiff(before, hostFingerprint(t, bed.Host.Config)); diff != "" {
		t.Errorf("a blocked migration changed the host: %s", diff)
	}
	kubectl(t, bed.Host.Kubeconfig, "-n", fedtest.KubeFedNamespace, "patch", "kubefedcluster", "cluster2", "--type=json", "-p", `[{"op":"remove","path":"/spec/disabledTLSValidations"}]`)
}

// dryRun runs the dry run, as text and as JSON, checks what it says, and
// returns the plan.
func dryRun(t *testing.T, bed *localfed.Federation, tokens map[string]string) *migrate.Plan {
	t.Helper()
	r := runFedwarden(t, "migrate", "kubefed", "--dry-run", "--host-kubeconfig", bed.Host.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("the dry run failed:\n%s", r)
	}
	t.Logf("migrate kubefed --dry-run:\n%s", r.stdout)
	checkNoMemberToken(t, "the dry run", r.stdout+r.stderr, tokens)
	for _, want := range []string{
		"cluster1", "Secret cluster1-token: keys ca.crt, token", "deployments.apps  1 FederatedDeployment",
		"ValidatingWebhookConfiguration/validations.core.kubefed.io", "create    FederatedCluster cluster2", "from 1 to 0 replicas",
		"Not carried over:", "spec.controllerDuration.availableDelay 20s", "--cluster-health-period=10s", "--default-remediation=Alert",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the dry run does not say %q", want)
		}
	}
	r = runFedwarden(t, "migrate", "kubefed", "--dry-run", "-o", "json", "--host-kubeconfig", bed.Host.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("the dry run -o json failed:\n%s", r)
	}
	plan := &migrate.Plan{}
	if err := json.Unmarshal([]byte(r.stdout), plan); err != nil {
		t.Fatalf("the dry run's JSON: %v\n%s", err, r.stdout)
	}
	if len(plan.Blockers) > 0 || len(plan.Inventory.Clusters) != 2 || len(plan.Inventory.Types) != len(kubefedKinds) {
		t.Fatalf("the plan: %d blockers %v, %d clusters, %d types", len(plan.Blockers), plan.Blockers, len(plan.Inventory.Clusters), len(plan.Inventory.Types))
	}
	return plan
}

// checkNoMemberToken fails if out holds a member's token, or part of one.
func checkNoMemberToken(t *testing.T, where, out string, tokens map[string]string) {
	t.Helper()
	checkNoTokenIn(t, where, out, slices.Collect(maps.Values(tokens))...)
}

// hostFingerprint is the resourceVersion of every object the migration
// may change on the host, by kind and name; for the kinds whose status
// KubeFed writes, what a write but to the status would change (see
// fingerprint): KubeFed, running during a dry run, writes each
// KubeFedCluster's status every 10 s (its probe time).
func hostFingerprint(t *testing.T, cfg *rest.Config) map[string]string {
	t.Helper()
	dyn := dynamicClient(t, cfg)
	out := map[string]string{}
	gvrs := []schema.GroupVersionResource{
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		{Group: "core.kubefed.io", Version: "v1beta1", Resource: "federatedtypeconfigs"},
		{Version: "v1", Resource: "secrets"},
		{Version: "v1", Resource: "configmaps"},
		fedtest.KubeFedClusters,
	}
	for _, gvr := range gvrs {
		l, err := dyn.Resource(gvr).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			key := gvr.Resource + "/" + it.GetNamespace() + "/" + it.GetName()
			if key == kubefedLeaderLock {
				continue // KubeFed renews it while it runs, dry run or not
			}
			if statusByKubeFed[gvr.Resource] {
				out[key] = fingerprint(&it)
			} else {
				out[key] = it.GetResourceVersion()
			}
		}
	}
	return out
}

// statusByKubeFed are the host kinds whose status KubeFed writes.
var statusByKubeFed = map[string]bool{fedtest.KubeFedClusters.Resource: true, "federatedtypeconfigs": true}

// kubefedLeaderLock is KubeFed's leader-election ConfigMap, which its
// running controller-manager writes every few seconds.
const kubefedLeaderLock = "configmaps/kube-federation-system/kubefed-controller-manager"

// memberFingerprints fingerprints each copy of sample1 in each member by
// what a write to it would change: its generation, labels, annotations and
// the entries of its managedFields but status (the member's own
// controllers write a Deployment's status).
func memberFingerprints(t *testing.T, members []*rest.Config) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, m := range members {
		dyn := dynamicClient(t, m)
		for _, c := range sampleCopies() {
			u, err := copyResource(dyn, c).Get(t.Context(), c.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("cluster%d %s %s/%s", i+1, c.gvr.Resource, c.namespace, c.name)] = fingerprint(u)
		}
	}
	return out
}

func fingerprint(u *unstructured.Unstructured) string {
	var fields []metav1.ManagedFieldsEntry
	for _, e := range u.GetManagedFields() {
		if e.Subresource != "status" {
			fields = append(fields, e)
		}
	}
	data, _ := json.Marshal(map[string]any{"generation": u.GetGeneration(), "labels": u.GetLabels(), "annotations": u.GetAnnotations(), "fields": fields})
	return string(data)
}

// fingerprintDiff says which entries differ, "" when none does.
func fingerprintDiff(before, after map[string]string) string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if before[k] != after[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", k, before[k], after[k]))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, k+": new")
		}
	}
	return strings.Join(diffs, "\n")
}

// checkHandedOver checks what the handover leaves on the host.
func checkHandedOver(t *testing.T, c client.Client) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "federatedtypeconfigs.core.kubefed.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Scope != apiextensionsv1.ClusterScoped {
		t.Errorf("the FederatedTypeConfig CRD is %s, want Fedwarden's, Cluster", crd.Spec.Scope)
	}
	w := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "validations.core.kubefed.io"}, w); err == nil {
		t.Error("KubeFed's webhook configuration is still there")
	}
	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: fedtest.KubeFedNamespace, Name: "cluster1-token"}, secret); err != nil {
		t.Fatal(err)
	}
	if secret.Annotations["fedwarden.io/credentials-cluster"] != "cluster1" {
		t.Errorf("Secret cluster1-token is not bound to cluster1: %v", secret.Annotations)
	}
}

// waitForAdoption waits until every CPV of sample1 records both members;
// with states, until they are InSync, but cluster1's ConfigMap, edited by
// hand, ModifiedOutOfBand.
func waitForAdoption(t *testing.T, c client.Client, states bool) {
	t.Helper()
	for _, ref := range sampleCopies() {
		ns, name, _ := strings.Cut(ref.cpv, "/")
		poll.Eventually(t, 2*time.Minute, "CPV "+ref.cpv+" to record both members", func(ctx context.Context) (bool, string) {
			cpv, err := cpvOf(ctx, c, ns, name)
			if err != nil {
				return false, err.Error()
			}
			got := map[string]typesv1beta1.DriftState{}
			for _, cv := range cpv.Status.ClusterVersions {
				got[string(cv.ClusterName)] = cv.State
			}
			if !states {
				return got["cluster1"] != "" && got["cluster2"] != "", fmt.Sprintf("%+v", cpv.Status.ClusterVersions)
			}
			want := map[string]typesv1beta1.DriftState{"cluster1": typesv1beta1.InSync, "cluster2": typesv1beta1.InSync}
			if ref.name == "test-configmap" {
				want["cluster1"] = typesv1beta1.ModifiedOutOfBand
			}
			return maps.Equal(got, want), fmt.Sprintf("%+v", cpv.Status.ClusterVersions)
		})
	}
}

// checkHandEditKept checks that the hand edit in cluster1 is reported and,
// under Alert, left as it is.
func checkHandEditKept(t *testing.T, member *rest.Config) {
	t.Helper()
	c := &corev1.ConfigMap{}
	if err := newClient(t, member).Get(t.Context(), types.NamespacedName{Namespace: "test-namespace", Name: "test-configmap"}, c); err != nil {
		t.Fatal(err)
	}
	if c.Data["A"] != "edited by hand" {
		t.Errorf("the hand edit was overwritten under Alert: %v", c.Data)
	}
}

// checkHandEditReported checks that the CPV names the field edited by hand
// in cluster1 and who edited it.
func checkHandEditReported(t *testing.T, c client.Client) {
	t.Helper()
	cpv, err := cpvOf(t.Context(), c, "test-namespace", "configmap-test-configmap")
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range cpv.Status.ClusterVersions {
		if cv.ClusterName == "cluster1" && (!slices.Equal(cv.ChangedPaths, []string{"/data/A"}) || !slices.Equal(cv.ChangedBy, []string{"kubectl-patch"})) {
			t.Errorf("cluster1's ConfigMap: changed paths %v by %v, want /data/A by kubectl-patch", cv.ChangedPaths, cv.ChangedBy)
		}
	}
}

// checkRolledBack checks what the rollback puts back on the host.
func checkRolledBack(t *testing.T, c client.Client) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "federatedtypeconfigs.core.kubefed.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("the FederatedTypeConfig CRD is %s after the rollback, want KubeFed's, Namespaced", crd.Spec.Scope)
	}
	w := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "validations.core.kubefed.io"}, w); err != nil {
		t.Errorf("KubeFed's webhook configuration is not back: %v", err)
	}
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("core.kubefed.io/v1beta1")
	l.SetKind("FederatedTypeConfigList")
	if err := c.List(t.Context(), l, client.InNamespace(fedtest.KubeFedNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != len(kubefedKinds) {
		t.Errorf("%d of KubeFed's FederatedTypeConfigs are back, want %d", len(l.Items), len(kubefedKinds))
	}
}

// kubefedBed is a localfed host with members cluster1 and cluster2 on
// which real KubeFed v0.10.0 runs and has placed sample1, with a webhook
// configuration and a Deployment of KubeFed's on the host as an install
// in a cluster has them: where a migration starts.
type kubefedBed struct {
	bed     *localfed.Federation
	binDir  string
	dir     string
	tokens  map[string]string // each member's KubeFed token
	members []*rest.Config
	host    client.Client
	kf      *fedtest.KubeFed // nil while stopped
}

func startKubeFedBed(t *testing.T) *kubefedBed {
	t.Helper()
	kubectlPath(t)
	binDir, err := localfed.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	bed := startBed(t, localfed.WithoutCRDs(), localfed.WithMemberNames("cluster1", "cluster2")).Fed
	tokens, err := fedtest.KubeFedSetup(t.Context(), binDir, bed, kubefedKinds...)
	if err != nil {
		t.Fatal(err)
	}
	k := &kubefedBed{bed: bed, binDir: binDir, dir: t.TempDir(), tokens: tokens,
		members: []*rest.Config{bed.Members[0].Config, bed.Members[1].Config}}
	k.startKubeFed(t)
	t.Cleanup(k.stopKubeFed)
	if err := fedtest.WaitKubeFedClustersReady(t.Context(), bed, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	applySample1(t, bed)
	waitForCopies(t, k.members, "KubeFed to place sample1 in both members")
	k.host = newClient(t, bed.Host.Config)
	addKubeFedWebhook(t, k.host)
	addKubeFedDeployment(t, k.host)
	return k
}

// startKubeFed runs KubeFed's controller-manager.
func (k *kubefedBed) startKubeFed(t *testing.T) {
	t.Helper()
	kf, err := fedtest.StartKubeFed(k.binDir, k.bed.Host.Kubeconfig, k.dir)
	if err != nil {
		t.Fatal(err)
	}
	k.kf = kf
}

// stopKubeFed ends KubeFed's controller-manager, if it runs.
func (k *kubefedBed) stopKubeFed() {
	if k.kf != nil {
		k.kf.Stop()
		k.kf = nil
	}
}

// changeTemplate changes the template of sample1's FederatedDeployment and
// waits until the change reaches both members, through Fedwarden.
func changeTemplate(t *testing.T, bed *localfed.Federation, members []*rest.Config) {
	t.Helper()
	kubectl(t, bed.Host.Kubeconfig, "-n", "test-namespace", "patch", "federateddeployment", "test-deployment", "--type=merge",
		"-p", `{"spec":{"template":{"metadata":{"labels":{"app":"nginx","tier":"web"}}}}}`)
	for i, m := range members {
		mc := newClient(t, m)
		poll.Eventually(t, time.Minute, fmt.Sprintf("the template change to reach cluster%d", i+1), func(ctx context.Context) (bool, string) {
			d := &appsv1.Deployment{}
			if err := mc.Get(ctx, types.NamespacedName{Namespace: "test-namespace", Name: "test-deployment"}, d); err != nil {
				return false, err.Error()
			}
			return d.Labels["tier"] == "web", fmt.Sprint(d.Labels)
		})
	}
}
