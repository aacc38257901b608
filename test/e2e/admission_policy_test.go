package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/config/admission"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/poll"
)

// The admission policies Fedwarden ships with its CRDs (config/admission),
// which localfed installs and waits for. Objects are only admitted here
// (dryRun) unless a test needs them stored.

// federatedKinds are the kinds the placement policy is checked on: the
// FederatedDeployment, whose CRD Fedwarden ships, and the FederatedNamespace,
// whose CRD `fedwarden enable namespaces` makes.
var federatedKinds = []string{"FederatedDeployment", "FederatedNamespace"}

// selectorCase is a clusterSelector and the keys or values the placement
// policy must name when it refuses it; none: Kubernetes' label selector
// parser accepts it, and so must the policy.
type selectorCase struct {
	name     string
	selector typesv1beta1.ClusterSelector
	bad      []string
}

func labels(kv ...string) typesv1beta1.ClusterSelector {
	s := typesv1beta1.ClusterSelector{MatchLabels: map[string]string{}}
	for i := 0; i < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func expressions(reqs ...typesv1beta1.ClusterSelectorRequirement) typesv1beta1.ClusterSelector {
	return typesv1beta1.ClusterSelector{MatchExpressions: reqs}
}

func req(key string, op typesv1beta1.SelectorOperator, values ...string) typesv1beta1.ClusterSelectorRequirement {
	return typesv1beta1.ClusterSelectorRequirement{Key: key, Operator: op, Values: values}
}

var (
	longName   = strings.Repeat("n", 63)
	longPrefix = strings.Repeat("p", 253)
)

var badSelectors = []selectorCase{
	{"label key with a space", labels("bad key", "x"), []string{"bad key"}},
	{"label key starting with a dash", labels("-region", "x"), []string{"-region"}},
	{"label key prefix in upper case", labels("Example.com/region", "x"), []string{"Example.com/region"}},
	{"label key with two slashes", labels("a/b/c", "x"), []string{"a/b/c"}},
	{"label key with an empty prefix", labels("/region", "x"), []string{"/region"}},
	{"label key with an empty name", labels("example.com/", "x"), []string{"example.com/"}},
	{"label key name of 64 characters", labels(longName+"n", "x"), []string{longName + "n"}},
	{"label key prefix of 254 characters", labels(longPrefix+"p/x", "x"), []string{longPrefix + "p/x"}},
	{"label value with a space", labels("region", "eu west"), []string{"eu west"}},
	{"label value starting with a dash", labels("region", "-eu"), []string{"-eu"}},
	{"label value ending with an underscore", labels("region", "eu_"), []string{"eu_"}},
	{"label value of 64 characters", labels("region", longName+"n"), []string{longName + "n"}},
	{"expression key with a '!'", expressions(req("tier!", "Exists")), []string{"tier!"}},
	{"expression key name of 64 characters", expressions(req(longName+"n", "NotIn", "x")), []string{longName + "n"}},
	{"expression values with a space and a dash", expressions(req("tier", "In", "gold", "bad value", "-x")), []string{"bad value", "-x"}},
	{"expression value that is only an underscore", expressions(req("zone", "NotIn", "ok", "_")), []string{"_"}},
}

var goodSelectors = []selectorCase{
	{name: "no selector terms: every cluster", selector: typesv1beta1.ClusterSelector{}},
	{name: "well-known key with a prefix", selector: labels("topology.kubernetes.io/region", "eu-west-1")},
	{name: "one-character key and value", selector: labels("a", "b")},
	{name: "empty value", selector: labels("tier", "")},
	{name: "upper case, underscore and dot in a name and a value", selector: labels("Example_Key.v1", "A.b_c-1")},
	{name: "longest prefix, name and value", selector: labels(longPrefix+"/"+longName, longName)},
	{name: "every operator", selector: expressions(req("region", "In", "eu-west-1", ""), req("tier", "NotIn", "bronze"),
		req("gpu", "Exists"), req("example.com/legacy", "DoesNotExist"))},
}

// TestABadSelectorIsRejectedAtAdmission checks that a clusterSelector that
// Kubernetes' label selector parser rejects never gets in, for any
// federated kind: the placement policy refuses it, naming the keys or
// values to fix, and accepts every selector the parser accepts.
func TestABadSelectorIsRejectedAtAdmission(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	federatedNamespaceCRD(t)
	c := hostClient(t)
	ns := testNamespace(t, c)
	for _, kind := range federatedKinds {
		for _, tt := range slices.Concat(badSelectors, goodSelectors) {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				if _, err := tt.selector.AsSelector(); (err != nil) != (len(tt.bad) > 0) {
					t.Fatalf("the case is wrong: Kubernetes' parser answers %v", err)
				}
				err := c.Create(t.Context(), federated(t, kind, ns, tt.selector), client.DryRunAll)
				if len(tt.bad) == 0 {
					if err != nil {
						t.Fatalf("a selector Kubernetes parses was refused: %v", err)
					}
					return
				}
				refusedBy(t, err, admission.ClusterSelectorPolicy, append(quoted(tt.bad), "Fix the")...)
			})
		}
	}
	t.Run("the policy and the parser agree", func(t *testing.T) {
		t.Parallel()
		agreesWithTheParser(t, c, ns)
	})
	t.Run("kubectl shows what to fix", func(t *testing.T) {
		t.Parallel()
		out := kubectlRefused(t, "create", "--dry-run=server", "-f", manifest(t, federated(t, "FederatedDeployment", ns, labels("region", "eu west"))))
		for _, want := range []string{"ValidatingAdmissionPolicy '" + admission.ClusterSelectorPolicy + "'",
			`spec.placement.clusterSelector has label values that are not valid: key "region": "eu west"`,
			"for example eu-west-1. Fix the values in matchLabels or matchExpressions and apply again."} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl printed %q, which does not say %q", out, want)
			}
		}
	})
}

// agreesWithTheParser admits a FederatedDeployment per label key and per
// label value of a list of edge cases, and checks that the placement policy
// refuses exactly those Kubernetes' parser rejects.
func agreesWithTheParser(t *testing.T, c client.Client, ns string) {
	keys := []string{"", "a", "A", "1", "a.b", "a..b", "a-b", "a_b", "-a", "a-", "_a", "a_", ".a", "a.",
		"k8s.io/a", "K8s.io/a", "k8s..io/a", "-k8s.io/a", "k8s.io-/a", "k8s_io/a", "k8s.io/-a", "k8s.io/a_",
		"a/", "/", "a b", "a\tb", "é", "a/é", longName, longName + "n", longPrefix + "/a", longPrefix + "p/a",
		strings.Repeat("p.", 126) + "p/a", longPrefix + "/" + longName, longPrefix + "/" + longName + "n"}
	values := []string{"", "a", "A1", "a.b", "a..b", "a_b", "a-b", "-a", "a-", "_", ".", "a b", "é", "a/b", longName, longName + "n"}
	var cases []typesv1beta1.ClusterSelector
	for _, k := range keys {
		cases = append(cases, labels(k, "v"))
	}
	for _, v := range values {
		cases = append(cases, labels("k", v))
	}
	for _, sel := range cases {
		_, parseErr := sel.AsSelector()
		err := c.Create(t.Context(), federated(t, "FederatedDeployment", ns, sel), client.DryRunAll)
		refused := err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+admission.ClusterSelectorPolicy+"'")
		if err != nil && !refused {
			t.Errorf("matchLabels %q: the host answered %v, not the placement policy", sel.MatchLabels, err)
			continue
		}
		if refused != (parseErr != nil) {
			t.Errorf("matchLabels %q: the policy refuses it: %v; Kubernetes' parser rejects it: %v", sel.MatchLabels, refused, parseErr)
		}
	}
}

// TestAFederatedNamespaceIsNamedAfterItsNamespace checks that a
// FederatedNamespace can only federate the namespace it is in: one named
// after another namespace is refused at creation, with how to do it right.
func TestAFederatedNamespaceIsNamedAfterItsNamespace(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	federatedNamespaceCRD(t)
	c := hostClient(t)
	tenant := testNamespace(t, c)
	for _, name := range []string{"payroll", "kube-system", "default", tenant + "x"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fns := federated(t, "FederatedNamespace", tenant, typesv1beta1.ClusterSelector{})
			fns.SetName(name)
			refusedBy(t, c.Create(t.Context(), fns, client.DryRunAll), admission.FederatedNamespaceNamePolicy,
				fmt.Sprintf("a FederatedNamespace must be named after the namespace it is in, which is the namespace it federates: create it as %[1]s/%[1]s, not %[1]s/%[2]s", tenant, name))
		})
	}
	t.Run("a generated name", func(t *testing.T) {
		t.Parallel()
		fns := federated(t, "FederatedNamespace", tenant, typesv1beta1.ClusterSelector{})
		fns.SetName("")
		fns.SetGenerateName("payroll-")
		refusedBy(t, c.Create(t.Context(), fns, client.DryRunAll), admission.FederatedNamespaceNamePolicy, "create it as "+tenant+"/"+tenant)
	})
	t.Run("named after its namespace", func(t *testing.T) {
		t.Parallel()
		fns := federated(t, "FederatedNamespace", tenant, typesv1beta1.ClusterSelector{})
		if err := c.Create(t.Context(), fns, client.DryRunAll); err != nil {
			t.Fatalf("%s/%s was refused: %v", tenant, tenant, err)
		}
	})
	t.Run("kubectl", func(t *testing.T) {
		t.Parallel()
		fns := federated(t, "FederatedNamespace", tenant, typesv1beta1.ClusterSelector{})
		fns.SetName("payroll")
		out := kubectlRefused(t, "apply", "--server-side", "--dry-run=server", "-f", manifest(t, fns))
		want := fmt.Sprintf("create it as %[1]s/%[1]s, not %[1]s/payroll (to federate namespace payroll, create the FederatedNamespace in namespace payroll)", tenant)
		if !strings.Contains(out, want) {
			t.Errorf("kubectl printed %q, which does not say %q", out, want)
		}
	})
}

// TestTheResyncAnnotationIsBounded checks that a kubefed.io/resync value is
// never longer than the ClusterPropagatedVersion can record: at the bound
// it is accepted, over it refused, on creation and on update, counted in
// characters as the CPV's schema counts them.
func TestTheResyncAnnotationIsBounded(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	federatedNamespaceCRD(t)
	c := hostClient(t)
	ns := testNamespace(t, c)
	over := fmt.Sprintf("the kubefed.io/resync annotation is %d characters long, more than the %d its ClusterPropagatedVersion can record",
		admission.ResyncMaxLength+1, admission.ResyncMaxLength)
	for _, kind := range federatedKinds {
		for _, char := range []string{"r", "é"} {
			t.Run(kind+"/"+char, func(t *testing.T) {
				t.Parallel()
				obj := federated(t, kind, ns, typesv1beta1.ClusterSelector{})
				obj.SetAnnotations(map[string]string{typesv1beta1.AnnotationResync: strings.Repeat(char, admission.ResyncMaxLength)})
				if err := c.Create(t.Context(), obj.DeepCopy(), client.DryRunAll); err != nil {
					t.Fatalf("a value of %d characters was refused: %v", admission.ResyncMaxLength, err)
				}
				obj.SetAnnotations(map[string]string{typesv1beta1.AnnotationResync: strings.Repeat(char, admission.ResyncMaxLength+1)})
				refusedBy(t, c.Create(t.Context(), obj, client.DryRunAll), admission.ResyncAnnotationPolicy, over)
			})
		}
	}
	t.Run("on update, with kubectl", func(t *testing.T) {
		t.Parallel()
		obj := federated(t, "FederatedDeployment", ns, typesv1beta1.ClusterSelector{})
		obj.SetName("resync-update")
		obj.SetAnnotations(map[string]string{typesv1beta1.AnnotationResync: "first"})
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
		annotate := func(value string) []string {
			return []string{"annotate", "-n", ns, "federateddeployment/" + obj.GetName(), "--overwrite", typesv1beta1.AnnotationResync + "=" + value}
		}
		out := kubectlRefused(t, annotate(strings.Repeat("r", admission.ResyncMaxLength+1))...)
		if !strings.Contains(out, over) || !strings.Contains(out, "use a shorter value, such as the time (fedwarden resync sets one)") {
			t.Errorf("kubectl printed %q, which does not say %q and how to fix it", out, over)
		}
		kubectl(t, fed.Host.Kubeconfig, annotate(strings.Repeat("s", admission.ResyncMaxLength))...)
	})
}

// TestAnObjectAdmittedBeforeThePoliciesCanStillBeDeleted checks that the
// policies never strand an object stored before they existed (an upgrade):
// it can still be labelled, and deleted, its finalizer removed, as the
// controller does; only a change of the offending field itself is checked.
// It removes and restores bindings, so it has a host of its own.
func TestAnObjectAdmittedBeforeThePoliciesCanStillBeDeleted(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startBed(t, localfed.WithControllers())
	c := bed.Host
	old := federated(t, "FederatedDeployment", "default", labels("bad key", "x"))
	old.SetName("admitted-before")
	old.SetFinalizers([]string{typesv1beta1.FinalizerSync})
	old.SetAnnotations(map[string]string{typesv1beta1.AnnotationResync: strings.Repeat("r", admission.ResyncMaxLength+44)})
	storeWithoutPolicies(t, c, old)

	kubectl(t, bed.Fed.Host.Kubeconfig, "label", "fdeploy", old.GetName(), "team=payments")
	patch := func(p string) error {
		return c.Patch(t.Context(), old.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(p)))
	}
	refusedBy(t, patch(`{"spec":{"placement":{"clusterSelector":{"matchLabels":{"other bad":"x"}}}}}`), admission.ClusterSelectorPolicy, `"other bad"`)
	refusedBy(t, patch(`{"metadata":{"annotations":{"kubefed.io/resync":"`+strings.Repeat("s", admission.ResyncMaxLength+1)+`"}}}`), admission.ResyncAnnotationPolicy, "use a shorter value")
	kubectl(t, bed.Fed.Host.Kubeconfig, "delete", "fdeploy", old.GetName(), "--wait=false")
	if err := patch(`{"metadata":{"finalizers":null}}`); err != nil {
		t.Fatalf("removing the finalizer of the object being deleted, as the controller does: %v", err)
	}
	poll.Eventually(t, 30*time.Second, "the object to be gone", func(ctx context.Context) (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(old), old.DeepCopy())
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// storeWithoutPolicies stores obj, which the selector and resync policies
// refuse, as if it had been stored before they existed: it deletes their
// bindings, creates obj, and binds them again, waiting each time until the
// API server has loaded the change.
func storeWithoutPolicies(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	set, err := admission.Objects()
	if err != nil {
		t.Fatal(err)
	}
	probes := map[string]*unstructured.Unstructured{
		admission.ClusterSelectorPolicy:  federated(t, "FederatedDeployment", obj.GetNamespace(), labels("bad key", "x")),
		admission.ResyncAnnotationPolicy: federated(t, "FederatedDeployment", obj.GetNamespace(), typesv1beta1.ClusterSelector{}),
	}
	probes[admission.ResyncAnnotationPolicy].SetAnnotations(map[string]string{typesv1beta1.AnnotationResync: strings.Repeat("r", admission.ResyncMaxLength+1)})
	for _, b := range set.Bindings {
		if probes[b.Name] != nil {
			if err := c.Delete(t.Context(), b.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
	}
	poll.Eventually(t, time.Minute, "the API server to admit the object without the bindings", func(ctx context.Context) (bool, string) {
		err := c.Create(ctx, obj.DeepCopy(), client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	})
	if err := c.Create(t.Context(), obj.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	for _, b := range set.Bindings {
		if probes[b.Name] != nil {
			if err := c.Create(t.Context(), b.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for policy, probe := range probes {
		poll.Eventually(t, time.Minute, policy+" to be enforced again", func(ctx context.Context) (bool, string) {
			err := c.Create(ctx, probe, client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'"), fmt.Sprint(err)
		})
	}
}

// federated returns a Federated<kind> named after ns (as a FederatedNamespace
// must be) in ns, placed with selector.
func federated(t *testing.T, kind, ns string, selector typesv1beta1.ClusterSelector) *unstructured.Unstructured {
	t.Helper()
	sel, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&selector)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"placement": map[string]any{"clusterSelector": sel}}}}
	obj.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind(kind))
	obj.SetNamespace(ns)
	obj.SetName(ns)
	return obj
}

// refusedBy asserts that err is policy's refusal, and says each of want.
func refusedBy(t *testing.T, err error, policy string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the host admitted the object; want %s to refuse it", policy)
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'") {
		t.Fatalf("error %v, want a refusal by ValidatingAdmissionPolicy %s", err, policy)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s's message %q does not say %q", policy, err, w)
		}
	}
}

// quoted is how the placement policy quotes keys and values: cut to 64
// characters.
func quoted(ss []string) []string {
	var out []string
	for _, s := range ss {
		if len(s) > 64 {
			s = s[:61] + "..."
		}
		out = append(out, `"`+s+`"`)
	}
	return out
}

// manifest writes obj to a YAML file for kubectl and returns its path.
func manifest(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectlRefused runs kubectl against the shared host, as a user would,
// expects it to fail, and returns what it printed.
func kubectlRefused(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), kubectlPath(t), append([]string{"--kubeconfig", fed.Host.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) {
		t.Fatalf("kubectl %s: %v, want it to fail\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// namespaceCRD guards the FederatedNamespace CRD of the shared host.
var namespaceCRD struct {
	sync.Mutex
	ready bool
}

// federatedNamespaceCRD installs, once, the FederatedNamespace CRD that
// `fedwarden enable namespaces` makes, in the shared host, with kubectl;
// not its FederatedTypeConfig: namespaces are not federated, so the other
// tests see no change.
func federatedNamespaceCRD(t *testing.T) {
	t.Helper()
	namespaceCRD.Lock()
	defer namespaceCRD.Unlock()
	if namespaceCRD.ready {
		return
	}
	r := runFedwarden(t, "enable", "namespaces", "-o", "yaml", "--host-kubeconfig", fed.Host.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("fedwarden enable namespaces -o yaml:\n%s", r)
	}
	var crd string
	for _, doc := range strings.Split(r.stdout, "\n---\n") {
		if strings.Contains(doc, "kind: CustomResourceDefinition") {
			crd = doc
		}
	}
	if crd == "" {
		t.Fatalf("fedwarden enable namespaces -o yaml printed no CRD:\n%s", r)
	}
	path := filepath.Join(t.TempDir(), "federatednamespaces.yaml")
	if err := os.WriteFile(path, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, fed.Host.Kubeconfig, "apply", "--server-side", "-f", path)
	poll.Eventually(t, time.Minute, "the host to serve FederatedNamespaces", func(ctx context.Context) (bool, string) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("FederatedNamespaceList"))
		c, err := buildClient(fed.Host.Config) // a new client discovers the kind afresh
		if err != nil {
			return false, err.Error()
		}
		if err := c.List(ctx, list); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	namespaceCRD.ready = true
}
