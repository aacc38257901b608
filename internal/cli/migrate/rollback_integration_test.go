package migrate_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	migratecli "github.com/fedwarden/fedwarden/internal/cli/migrate"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/localfed"
)

// controlPlane is KubeFed's namespace, where the handover keeps its state.
const controlPlane = "kube-federation-system"

// stateName names the Secret in which the handover keeps its state, and
// the ConfigMap in which an earlier Fedwarden kept it.
const stateName = "fedwarden-migrate-kubefed"

// stateWriter is a ServiceAccount of the control-plane namespace that may
// write ConfigMaps there, and nothing else: as KubeFed's controller-manager
// may for its leader lock, or any workload given a Role to do so.
const stateWriter = "state-writer"

// A ServiceAccount that may write only ConfigMaps in KubeFed's namespace
// stores, where an earlier Fedwarden kept the handover's state, a state
// whose "webhook configuration" is a ClusterRoleBinding of itself to
// cluster-admin. An admin runs --rollback, as the handover's message used
// to tell: it exits non-zero naming that ClusterRoleBinding, and the
// ServiceAccount still may not do everything. Neither --dry-run nor the
// state's own digest, which --dry-run prints, makes it restore anything.
// Where the handover now keeps its state, a Secret, that ServiceAccount
// may not write at all.
func TestRollbackRefusesWhatTheHandoverDidNotSave(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tb := newRollbackBed(ctx, t)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: stateName}}
	if err := tb.writer.Create(ctx, secret); !apierrors.IsForbidden(err) {
		t.Fatalf("the ConfigMap writer creating Secret %s/%s: %v, want Forbidden", controlPlane, stateName, err)
	}

	const binding = "state-writer-is-admin"
	crb := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": binding},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "namespace": controlPlane, "name": stateWriter}},
	}
	tb.writeLegacyState(ctx, t, map[string]any{"webhooks": []any{crb}})
	refused := "ClusterRoleBinding " + binding + ": "

	stdout, stderr, code := tb.rollback("--rollback")
	t.Logf("migrate kubefed --rollback:\n%s%s", stdout, stderr)
	if code == 0 || !strings.Contains(stderr, refused) {
		t.Errorf("--rollback: exit code %d, stderr %q; want a failure naming %s", code, stderr, strings.TrimSuffix(refused, ": "))
	}
	tb.checkNotAdmin(ctx, t, binding)

	stdout, stderr, code = tb.rollback("--rollback", "--dry-run")
	t.Logf("migrate kubefed --rollback --dry-run:\n%s%s", stdout, stderr)
	if code == 0 || !strings.Contains(stdout, refused) || !strings.Contains(stderr, refused) {
		t.Errorf("--rollback --dry-run: exit code %d, stdout %q, stderr %q; want a failure listing %s as refused", code, stdout, stderr, binding)
	}
	tb.checkNotAdmin(ctx, t, binding)

	stdout, stderr, code = tb.rollback("--rollback", "--state-digest", stateDigest(t, stdout))
	t.Logf("migrate kubefed --rollback --state-digest:\n%s%s", stdout, stderr)
	if code == 0 || !strings.Contains(stderr, refused) {
		t.Errorf("--rollback with the state's own digest: exit code %d, stderr %q; want a failure naming %s", code, stderr, binding)
	}
	tb.checkNotAdmin(ctx, t, binding)
	cm := &corev1.ConfigMap{}
	if err := tb.admin.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: stateName}, cm); err != nil {
		t.Errorf("the refused state is gone, which the admin needs to see who wrote it: %v", err)
	}
}

// A ConfigMap writer stores a state holding only what a handover saves,
// by kind and name: KubeFed's mutating webhook configuration, but calling
// an endpoint of the writer's choice. --rollback restores nothing without
// the digest of the state, nor with another digest; --rollback --dry-run
// shows what it would restore, what that webhook calls, and the digest,
// and changes nothing; given that digest once the admin has checked it,
// --rollback restores it and deletes the ConfigMap: an earlier Fedwarden's
// state, which printed no digest, can still be rolled back.
func TestRollbackNeedsTheHandoversDigest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tb := newRollbackBed(ctx, t)

	const (
		name = "mutation.core.kubefed.io"
		url  = "https://127.0.0.1:1/collect"
	)
	webhook := map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]any{"name": name},
		"webhooks": []any{map[string]any{
			"name": "kubefedconfigs.core.kubefed.io", "clientConfig": map[string]any{"url": url},
			"admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "failurePolicy": "Ignore",
			"rules": []any{map[string]any{"operations": []any{"CREATE"}, "apiGroups": []any{"core.kubefed.io"}, "apiVersions": []any{"v1beta1"}, "resources": []any{"kubefedconfigs"}}},
		}},
	}
	tb.writeLegacyState(ctx, t, map[string]any{"webhooks": []any{webhook}})

	for _, args := range [][]string{{"--rollback"}, {"--rollback", "--state-digest", "sha256:" + strings.Repeat("0", 64)}} {
		stdout, stderr, code := tb.rollback(args...)
		t.Logf("migrate kubefed %s:\n%s%s", strings.Join(args, " "), stdout, stderr)
		if code == 0 || !strings.Contains(stderr, "nothing was restored") {
			t.Errorf("%s: exit code %d, stderr %q; want a refusal", strings.Join(args, " "), code, stderr)
		}
		tb.checkWebhook(ctx, t, name, false)
	}

	stdout, stderr, code := tb.rollback("--rollback", "--dry-run")
	t.Logf("migrate kubefed --rollback --dry-run:\n%s%s", stdout, stderr)
	for _, want := range []string{"ConfigMap " + controlPlane + "/" + stateName, "anyone who may write ConfigMaps",
		"restore", "MutatingWebhookConfiguration " + name, "URL " + url} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--rollback --dry-run does not print %q:\n%s", want, stdout)
		}
	}
	if code != 0 {
		t.Fatalf("--rollback --dry-run: exit code %d, stderr %q", code, stderr)
	}
	tb.checkWebhook(ctx, t, name, false)

	stdout, stderr, code = tb.rollback("--rollback", "--state-digest", stateDigest(t, stdout))
	t.Logf("migrate kubefed --rollback --state-digest:\n%s%s", stdout, stderr)
	if code != 0 {
		t.Fatalf("--rollback with the digest: exit code %d, stderr %q", code, stderr)
	}
	tb.checkWebhook(ctx, t, name, true)
	cm := &corev1.ConfigMap{}
	if err := tb.admin.Get(ctx, client.ObjectKey{Namespace: controlPlane, Name: stateName}, cm); !apierrors.IsNotFound(err) {
		t.Errorf("the state's ConfigMap after the rollback: %v, want it deleted", err)
	}
}

// rollbackBed is a bare host with KubeFed's namespace, in which the
// ServiceAccount stateWriter may write ConfigMaps only.
type rollbackBed struct {
	admin  client.Client
	writer client.Client
	flags  []string
}

func newRollbackBed(ctx context.Context, t *testing.T) *rollbackBed {
	t.Helper()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(0), localfed.WithControllers())
	admin := clitest.Client(t, fed.Host.Kubeconfig)
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: stateWriter}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: "configmap-writer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: "configmap-writer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmap-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: controlPlane, Name: stateWriter}}},
	}
	for _, obj := range objs {
		if err := admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "state-writer.kubeconfig")
	if err := fed.Host.WriteServiceAccountKubeconfig(ctx, controlPlane, stateWriter, path, time.Hour); err != nil {
		t.Fatal(err)
	}
	tb := &rollbackBed{admin: admin, writer: clitest.Client(t, path),
		flags: []string{"--host-kubeconfig", fed.Host.Kubeconfig, "--stop-timeout", "20s", "--timeout", "20s"}}
	if !tb.may(ctx, t, authorizationv1.ResourceAttributes{Namespace: controlPlane, Verb: "create", Resource: "configmaps"}) {
		t.Fatalf("ServiceAccount %s may not create ConfigMaps: the test bed is wrong", stateWriter)
	}
	return tb
}

// rollback runs `fedwarden migrate kubefed` with args against the host, as
// its admin.
func (tb *rollbackBed) rollback(args ...string) (stdout, stderr string, code int) {
	return clitest.Execute(migratecli.NewCommand, slices.Concat([]string{"kubefed"}, args, tb.flags)...)
}

// writeLegacyState saves st, as the ServiceAccount stateWriter, where an
// earlier Fedwarden kept the handover's state.
func (tb *rollbackBed) writeLegacyState(ctx context.Context, t *testing.T, st map[string]any) {
	t.Helper()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controlPlane, Name: stateName},
		BinaryData: map[string][]byte{"state.json.gz": buf.Bytes()}}
	if err := tb.writer.Create(ctx, cm); err != nil {
		t.Fatalf("the ConfigMap writer saving a state: %v", err)
	}
}

// may asks the host, as `kubectl auth can-i --as` does, whether
// stateWriter may do attrs.
func (tb *rollbackBed) may(ctx context.Context, t *testing.T, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + controlPlane + ":" + stateWriter,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + controlPlane, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	if err := tb.admin.Create(ctx, sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// checkNotAdmin checks that stateWriter may not do everything, and that
// no ClusterRoleBinding binding names exists.
func (tb *rollbackBed) checkNotAdmin(ctx context.Context, t *testing.T, binding string) {
	t.Helper()
	if tb.may(ctx, t, authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}) {
		t.Errorf("ServiceAccount %s/%s may do '*' on '*': the rollback made it cluster-admin", controlPlane, stateWriter)
	}
	crb := &rbacv1.ClusterRoleBinding{}
	if err := tb.admin.Get(ctx, client.ObjectKey{Name: binding}, crb); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding %s: %v, want none", binding, err)
	}
}

// checkWebhook checks whether the MutatingWebhookConfiguration name
// exists.
func (tb *rollbackBed) checkWebhook(ctx context.Context, t *testing.T, name string, want bool) {
	t.Helper()
	err := tb.admin.Get(ctx, client.ObjectKey{Name: name}, &admissionregistrationv1.MutatingWebhookConfiguration{})
	switch {
	case want && err != nil:
		t.Errorf("MutatingWebhookConfiguration %s: %v, want it restored", name, err)
	case !want && !apierrors.IsNotFound(err):
		t.Errorf("MutatingWebhookConfiguration %s: %v, want none", name, err)
	}
}

// stateDigest returns the state's digest that --rollback --dry-run
// printed.
func stateDigest(t *testing.T, dryRun string) string {
	t.Helper()
	m := regexp.MustCompile(`digest (sha256:[0-9a-f]{64})`).FindStringSubmatch(dryRun)
	if m == nil {
		t.Fatalf("--rollback --dry-run printed no digest:\n%s", dryRun)
	}
	return m[1]
}

// TestRollbackRefusesAKubeFedNamedWebhookOnPods: a state whose webhook
// configuration has KubeFed's name but matches Pods (the core group)
// would send, or let a stranger's endpoint change, every Pod written in
// the cluster once restored with the admin's rights. Rollback refuses it,
// naming the webhook and the group, even with the state's own digest, and
// restores nothing.
func TestRollbackRefusesAKubeFedNamedWebhookOnPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tb := newRollbackBed(ctx, t)

	const name = "mutation.core.kubefed.io"
	webhook := map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]any{"name": name},
		"webhooks": []any{map[string]any{
			"name": "pods.core.kubefed.io", "clientConfig": map[string]any{"url": "https://127.0.0.1:1/mutate"},
			"admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "failurePolicy": "Ignore",
			"rules": []any{map[string]any{"operations": []any{"CREATE"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods"}}},
		}},
	}
	tb.writeLegacyState(ctx, t, map[string]any{"webhooks": []any{webhook}})

	dryRun, stderr, code := tb.rollback("--rollback", "--dry-run")
	t.Logf("migrate kubefed --rollback --dry-run:\n%s%s", dryRun, stderr)
	if code == 0 {
		t.Errorf("--rollback --dry-run of a webhook on Pods: exit code 0, want a refusal")
	}
	stdout, stderr, code := tb.rollback("--rollback", "--state-digest", stateDigest(t, dryRun+stderr))
	t.Logf("migrate kubefed --rollback --state-digest:\n%s%s", stdout, stderr)
	if code == 0 || !strings.Contains(stderr, "MutatingWebhookConfiguration "+name) || !strings.Contains(stderr, "pods.core.kubefed.io") {
		t.Errorf("--rollback with the state's digest: exit code %d, stderr %q; want a refusal naming the webhook", code, stderr)
	}
	tb.checkWebhook(ctx, t, name, false)
}
