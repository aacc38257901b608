package join_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/cli/unjoin"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/internal/streams"
)

const ns = v1beta1.DefaultFederationNamespace

// TestJoinUnjoin joins a member of a real local federation, joins it again,
// unjoins it, and unjoins it once more while the member is down.
func TestJoinUnjoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tb, member := startTestBed(ctx, t)

	stderr := tb.mustRun(t, join.NewCommand, "--wait=false", "--region", "eu", "--zone", "eu-a", "--label", "env=test")
	versions := tb.checkJoined(t, stderr)

	stderr = tb.mustRun(t, join.NewCommand, "--wait=false", "--region", "eu", "--zone", "eu-a", "--label", "env=test")
	if again := tb.checkJoined(t, stderr); !maps.Equal(again, versions) {
		t.Errorf("a second join changed objects: resourceVersions %v, then %v", versions, again)
	}
	if strings.Contains(stderr, "created") || strings.Contains(stderr, "configured") {
		t.Errorf("a second join reports changes:\n%s", stderr)
	}

	tb.checkRejoinBinds(ctx, t)

	_, stderr, code := tb.run(join.NewCommand, "--region", "eu", "--zone", "eu-a", "--label", "env=test", "--timeout", "2s")
	if code != 1 || !strings.Contains(stderr, "is `fedwarden controller-manager` running against this host?") {
		t.Errorf("join --wait without a controller-manager: exit code %d, stderr:\n%s", code, stderr)
	}

	tb.mustRun(t, unjoin.NewCommand)
	tb.checkGone(t, tb.host, tb.hostObjects())
	tb.checkGone(t, tb.member, tb.memberObjects())
	tb.mustRun(t, unjoin.NewCommand) // nothing left to delete: still fine

	tb.mustRun(t, join.NewCommand, "--wait=false")
	if err := member.Kill(); err != nil { // Stop would do, but waits for a graceful shutdown
		t.Fatalf("killing the member: %v", err)
	}
	_, stderr, code = tb.run(unjoin.NewCommand, "--timeout", "5s")
	if code != 3 || !strings.Contains(stderr, "left on the member") || !strings.Contains(stderr, "ClusterRoleBinding fedwarden:member:member-1") {
		t.Errorf("unjoin with the member down: exit code %d, want 3; stderr:\n%s", code, stderr)
	}
	tb.checkGone(t, tb.host, tb.hostObjects())

	if err := member.Restart(ctx); err != nil {
		t.Fatalf("restarting the member: %v", err)
	}
	tb.mustRun(t, unjoin.NewCommand)
	tb.checkGone(t, tb.member, tb.memberObjects())
}

// checkRejoinBinds checks that join binds the credentials Secret to the
// FederatedCluster, and that joining again binds a Secret that an older
// join wrote without a binding.
func (tb *testBed) checkRejoinBinds(ctx context.Context, t *testing.T) {
	t.Helper()
	key := keyOf(&corev1.Secret{}, true)
	binding := func() map[string]string {
		secret := &corev1.Secret{}
		if err := tb.host.Get(ctx, key, secret); err != nil {
			t.Fatal(err)
		}
		return secret.Annotations
	}
	fc := &v1beta1.FederatedCluster{}
	if err := tb.host.Get(ctx, client.ObjectKey{Name: "member-1"}, fc); err != nil {
		t.Fatal(err)
	}
	want := registration.CredentialsBinding(fc.Name, fc.Spec.APIEndpoint, fc.Spec.CABundle)
	if got := binding(); !maps.Equal(got, want) {
		t.Fatalf("credentials Secret annotations = %v, want the binding %v", got, want)
	}
	old := &corev1.Secret{}
	old.Namespace, old.Name = key.Namespace, key.Name
	if err := tb.host.Patch(ctx, old, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":null}}`))); err != nil {
		t.Fatal(err)
	}
	tb.mustRun(t, join.NewCommand, "--wait=false", "--region", "eu", "--zone", "eu-a", "--label", "env=test")
	if got := binding(); !maps.Equal(got, want) {
		t.Errorf("after joining again, the credentials Secret annotations = %v, want the binding %v", got, want)
	}
}

type testBed struct {
	host, member client.Client
	flags        []string // the name and kubeconfig flags every command takes
}

// startTestBed starts a local federation of a host and the member
// member-1, for commands that name it and take extra flags.
func startTestBed(ctx context.Context, t *testing.T, extra ...string) (*testBed, *localfed.Cluster) {
	t.Helper()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(1))
	member := fed.Member("member-1")
	return &testBed{
		host:   clitest.Client(t, fed.Host.Kubeconfig),
		member: clitest.Client(t, member.Kubeconfig),
		flags:  append([]string{"member-1", "--host-kubeconfig", fed.Host.Kubeconfig, "--cluster-kubeconfig", member.Kubeconfig}, extra...),
	}, member
}

// run runs a command with the test bed's flags and extra, and returns its
// output and the exit code root.Execute would give.
func (tb *testBed) run(newCommand func(streams.IO) *cobra.Command, extra ...string) (stdout, stderr string, code int) {
	return clitest.Execute(newCommand, slices.Concat(tb.flags, extra)...)
}

func (tb *testBed) mustRun(t *testing.T, newCommand func(streams.IO) *cobra.Command, extra ...string) (stderr string) {
	t.Helper()
	_, stderr, code := tb.run(newCommand, extra...)
	if code != 0 {
		t.Fatalf("%s exited with %d:\n%s", newCommand(streams.IO{}).Name(), code, stderr)
	}
	return stderr
}

func (tb *testBed) memberObjects() []client.Object {
	return []client.Object{
		&corev1.ServiceAccount{}, &corev1.Secret{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
	}
}

func (tb *testBed) hostObjects() []client.Object {
	return []client.Object{&corev1.Secret{}, &v1beta1.FederatedCluster{}}
}

// keyOf returns the name join gives an object of obj's type.
func keyOf(obj client.Object, host bool) client.ObjectKey {
	switch obj.(type) {
	case *corev1.ServiceAccount:
		return client.ObjectKey{Namespace: ns, Name: "fedwarden-member-1"}
	case *corev1.Secret:
		if host {
			return client.ObjectKey{Namespace: ns, Name: "fedwarden-member-1-credentials"}
		}
		return client.ObjectKey{Namespace: ns, Name: "fedwarden-member-1-token"}
	case *v1beta1.FederatedCluster:
		return client.ObjectKey{Name: "member-1"}
	default:
		return client.ObjectKey{Name: "fedwarden:member:member-1"}
	}
}

// checkJoined checks the objects of a join on both sides, and that the
// token appears nowhere in the output; it returns their resourceVersions.
func (tb *testBed) checkJoined(t *testing.T, stderr string) map[string]string {
	t.Helper()
	// First, as using the token labels its Secret (legacy-token-last-used).
	tb.checkCredentials(t, stderr)
	ctx := context.Background()
	versions := map[string]string{}
	for _, side := range []struct {
		c       client.Client
		objects []client.Object
		host    bool
	}{{tb.member, tb.memberObjects(), false}, {tb.host, tb.hostObjects(), true}} {
		for _, obj := range side.objects {
			key := keyOf(obj, side.host)
			if err := side.c.Get(ctx, key, obj); err != nil {
				t.Fatalf("reading %T %s: %v", obj, key, err)
			}
			if obj.GetLabels()[v1beta1.LabelCluster] != "member-1" {
				t.Errorf("%T %s has labels %v", obj, key, obj.GetLabels())
			}
			versions[fmt.Sprintf("%T %s", obj, key)] = obj.GetResourceVersion()
		}
	}
	return versions
}

// checkCredentials checks the host Secret and FederatedCluster, and that the
// token is not in the output.
func (tb *testBed) checkCredentials(t *testing.T, stderr string) {
	t.Helper()
	ctx := context.Background()
	secret, fc := &corev1.Secret{}, &v1beta1.FederatedCluster{}
	if err := tb.host.Get(ctx, keyOf(secret, true), secret); err != nil {
		t.Fatal(err)
	}
	if err := tb.host.Get(ctx, keyOf(fc, true), fc); err != nil {
		t.Fatal(err)
	}
	token := string(secret.Data[v1beta1.SecretTokenKey])
	if token == "" || len(secret.Data[v1beta1.SecretCAKey]) == 0 {
		t.Errorf("the host Secret has keys %d bytes of token and %d of CA", len(token), len(secret.Data[v1beta1.SecretCAKey]))
	}
	if token != "" && strings.Contains(stderr, token) {
		t.Error("join printed the token")
	}
	if refs := secret.OwnerReferences; len(refs) != 1 || refs[0].UID != fc.UID {
		t.Errorf("the host Secret's owners are %v, want the FederatedCluster %s", refs, fc.UID)
	}
	tb.checkRights(t, fc, secret)
	if fc.Spec.SecretRef == nil || fc.Spec.SecretRef.Name != secret.Name || fc.Spec.Region != "eu" || fc.Labels["env"] != "test" ||
		fc.Labels[v1beta1.LabelZone] != "eu-a" || !strings.HasPrefix(fc.Spec.APIEndpoint, "https://127.0.0.1:") || len(fc.Spec.CABundle) == 0 {
		t.Errorf("FederatedCluster = %+v", fc)
	}
}

// checkRights checks that the host Secret's token, with the FederatedCluster's
// endpoint and CA, can write ordinary objects in the member, but cannot
// give itself cluster-admin.
func (tb *testBed) checkRights(t *testing.T, fc *v1beta1.FederatedCluster, secret *corev1.Secret) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(&rest.Config{
		Host:            fc.Spec.APIEndpoint,
		BearerToken:     string(secret.Data[v1beta1.SecretTokenKey]),
		TLSClientConfig: rest.TLSClientConfig{CAData: fc.Spec.CABundle},
	}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "join-"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Errorf("the member's ServiceAccount cannot create a ConfigMap: %v", err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "join-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "fedwarden-member-1"}},
	}
	if err := c.Create(ctx, crb); !apierrors.IsForbidden(err) {
		t.Errorf("the member's ServiceAccount binding itself to cluster-admin: error %v, want Forbidden", err)
	}
}

// checkGone waits until the objects are gone: deletion is asynchronous for
// some of them (the FederatedCluster's Secret goes by garbage collection).
func (tb *testBed) checkGone(t *testing.T, c client.Client, objects []client.Object) {
	t.Helper()
	host := c == tb.host
	for _, obj := range objects {
		key := keyOf(obj, host)
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := c.Get(context.Background(), key, obj)
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%T %s is still there (err %v)", obj, key, err)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
