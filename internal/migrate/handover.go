package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/config/admission"
	"github.com/fedwarden/fedwarden/config/crd"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// FieldManager owns what the handover applies.
const FieldManager = "fedwarden-migrate"

// Host is the host cluster the handover and the rollback work on.
type Host struct {
	// NewClient returns a client of the host that knows the Kubernetes
	// kinds and Fedwarden's core kinds. A fresh one is made after CRDs
	// change, so that no cached mapping outlives them.
	NewClient func() (client.Client, error)
	CRDs      crdAPI
	Disco     federatedtype.Discovery
	// Out receives a line per thing done.
	Out io.Writer
	// StopTimeout bounds the wait for KubeFed's (or Fedwarden's)
	// controller-manager to stop renewing its leader lock.
	StopTimeout time.Duration
	// Timeout bounds each other wait (CRDs Established or gone).
	Timeout time.Duration
	// Rejoin creates Fedwarden's identity in the members: needed by a plan
	// made with Options.Rejoin only.
	Rejoin *Rejoiner
}

// progress prints one line of what was done.
func (h *Host) progress(format string, args ...any) {
	fmt.Fprintf(h.Out, format+"\n", args...)
}

// Handover runs plan p: it stops KubeFed, saves what it changes, and puts
// Fedwarden's CRDs, FederatedTypeConfigs and FederatedClusters in place. It
// writes nothing to a member cluster, unless p re-joins the members: then
// it first creates Fedwarden's identity in each, before anything changes
// on the host. It never writes to a copy. A plan with blockers is refused.
// It returns the digest of the state it saved, which Rollback asks for.
func (h *Host) Handover(ctx context.Context, p *Plan) (string, error) {
	if len(p.Blockers) > 0 {
		return "", fmt.Errorf("the migration is blocked: %d finding(s) to fix first (see --dry-run)", len(p.Blockers))
	}
	c, err := h.NewClient()
	if err != nil {
		return "", err
	}
	st, err := h.snapshot(ctx, c, p)
	if err != nil {
		return "", err
	}
	if p.Rejoin {
		// A handover that ran already would refuse to save its state below:
		// find out before writing to the members.
		if err := checkNoState(ctx, c, p.Inventory.Namespace); err != nil {
			return "", err
		}
	}
	tokens, err := h.createIdentities(ctx, p)
	if err != nil {
		return "", err
	}
	for _, m := range p.clusters {
		if m.rejoin != nil {
			st.Rejoined = append(st.Rejoined, m.cluster.Name)
		}
	}
	digest, err := saveState(ctx, c, p.Inventory.Namespace, st)
	if err != nil {
		return "", err
	}
	where := stateSecretName(p.Inventory.Namespace)
	h.progress("saved KubeFed's webhook configurations, %d CRDs and %d FederatedTypeConfigs in %s (digest %s)", len(st.CRDs), len(st.TypeConfigs), where, digest)
	phases := []func(context.Context, *Plan, *state) error{h.stopKubeFed, h.deleteWebhooks, h.replaceCRDs, h.clearStatus, h.createTypeConfigs,
		func(ctx context.Context, p *Plan, _ *state) error { return h.createClusters(ctx, p, tokens) }}
	for _, phase := range phases {
		if err := phase(ctx, p, st); err != nil {
			return "", fmt.Errorf("%w; what was saved is in %s: 'fedwarden migrate kubefed --rollback --state-digest %s' puts KubeFed back", err, where, digest)
		}
	}
	return digest, nil
}

// snapshot reads what the handover will remove or replace.
func (h *Host) snapshot(ctx context.Context, c client.Client, p *Plan) (*state, error) {
	inv := p.Inventory
	st := &state{}
	if inv.Controller != nil {
		st.Replicas = &inv.Controller.Replicas
	}
	for _, w := range inv.Webhooks {
		kind, name, _ := strings.Cut(w, "/")
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: kind})
		if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			return nil, fmt.Errorf("reading %s: %w", w, err)
		}
		st.Webhooks = append(st.Webhooks, stored(u.Object))
	}
	replaced, err := replacedCRDs(p)
	if err != nil {
		return nil, err
	}
	for _, name := range replaced {
		m, err := crdMap(inv.crds[name])
		if err != nil {
			return nil, err
		}
		st.CRDs = append(st.CRDs, m)
	}
	for _, u := range inv.typeConfigs {
		obj := stored(u.Object)
		unstructured.RemoveNestedField(obj, "metadata", "finalizers")
		st.TypeConfigs = append(st.TypeConfigs, obj)
	}
	return st, nil
}

// replacedCRDs names KubeFed's CRDs the handover replaces: those of the
// federated kinds, and those Fedwarden ships under the same name.
func replacedCRDs(p *Plan) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	add := func(name string) {
		if _, ok := p.Inventory.crds[name]; ok && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	add(typeConfigCRD)
	add(rspCRD)
	for _, m := range p.types {
		add(m.crd)
	}
	bases, err := crd.Objects()
	if err != nil {
		return nil, err
	}
	for _, b := range bases {
		add(b.Name)
	}
	return names, nil
}

// stopKubeFed scales KubeFed's controller-manager to 0, when it is a
// Deployment of the namespace, and waits until its leader lock is idle.
func (h *Host) stopKubeFed(ctx context.Context, p *Plan, _ *state) error {
	inv := p.Inventory
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	if inv.Controller != nil {
		patch := []byte(`{"spec":{"replicas":0}}`)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: inv.Namespace, Name: inv.Controller.Name}}
		if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("scaling Deployment %s/%s to 0: %w", inv.Namespace, inv.Controller.Name, err)
		}
		h.progress("scaled Deployment %s/%s to 0 replicas", inv.Namespace, inv.Controller.Name)
	} else {
		h.progress("no Deployment %s/%s: waiting for KubeFed's controller-manager to be stopped by you", inv.Namespace, ControllerDeployment)
	}
	lease, err := time.ParseDuration(inv.LeaseDuration)
	if err != nil {
		lease = defaultLeaseDuration
	}
	if err := waitLockIdle(ctx, c, inv.Namespace, ControllerDeployment, lease, h.StopTimeout); err != nil {
		return err
	}
	h.progress("KubeFed's leader lock %s/%s is no longer renewed: KubeFed has stopped", inv.Namespace, ControllerDeployment)
	return nil
}

// deleteWebhooks removes KubeFed's webhook configurations.
func (h *Host) deleteWebhooks(ctx context.Context, _ *Plan, st *state) error {
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	for _, w := range st.Webhooks {
		u := &unstructured.Unstructured{Object: w}
		if err := c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		h.progress("deleted %s %s", u.GetKind(), u.GetName())
	}
	return nil
}

// replaceCRDs puts Fedwarden's CRDs in place of KubeFed's: the
// FederatedTypeConfig CRD, whose scope differs, is deleted with its
// (saved) objects and created again; every other is replaced in place,
// keeping its objects. Then the admission policies are installed.
func (h *Host) replaceCRDs(ctx context.Context, p *Plan, st *state) error {
	if err := h.dropKubeFedTypeConfigs(ctx, p, st); err != nil {
		return err
	}
	bases, err := crd.Objects()
	if err != nil {
		return err
	}
	for _, b := range bases {
		if err := replaceCRD(ctx, h.CRDs, b); err != nil {
			return err
		}
		h.progress("installed CustomResourceDefinition %s", b.Name)
	}
	for _, m := range p.types {
		want, err := fedwardenCRD(ctx, h.Disco, m.typ)
		if err != nil {
			return err
		}
		if err := replaceCRD(ctx, h.CRDs, want); err != nil {
			return err
		}
		h.progress("replaced CustomResourceDefinition %s with Fedwarden's (%d objects kept)", want.Name, m.resources)
	}
	names := []string{}
	for _, b := range bases {
		names = append(names, b.Name)
	}
	for _, m := range p.types {
		names = append(names, m.crd)
	}
	for _, name := range names {
		if err := waitEstablished(ctx, h.CRDs, name, h.Timeout); err != nil {
			return err
		}
	}
	return h.installPolicies(ctx)
}

// dropKubeFedTypeConfigs deletes KubeFed's namespaced FederatedTypeConfig
// CRD with its objects, which are saved: their finalizers are removed
// first, as the stopped KubeFed would never remove them.
func (h *Host) dropKubeFedTypeConfigs(ctx context.Context, p *Plan, st *state) error {
	current, ok := p.Inventory.crds[typeConfigCRD]
	if !ok || current.Spec.Scope == "Cluster" {
		return nil
	}
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	for _, u := range p.Inventory.typeConfigs {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(typeConfigGVK)
		obj.SetNamespace(u.GetNamespace())
		obj.SetName(u.GetName())
		err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of FederatedTypeConfig %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
	}
	if err := deleteCRD(ctx, h.CRDs, typeConfigCRD, h.Timeout); err != nil {
		return err
	}
	h.progress("deleted KubeFed's namespaced CustomResourceDefinition %s and its %d FederatedTypeConfigs (saved)", typeConfigCRD, len(st.TypeConfigs))
	return nil
}

// installPolicies creates or updates Fedwarden's admission policies and
// their bindings.
func (h *Host) installPolicies(ctx context.Context) error {
	set, err := admission.Objects()
	if err != nil {
		return err
	}
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	var objs []client.Object
	for _, p := range set.Policies {
		objs = append(objs, p)
	}
	for _, b := range set.Bindings {
		objs = append(objs, b)
	}
	for _, obj := range objs {
		if err := apply(ctx, c, obj); err != nil {
			return err
		}
	}
	h.progress("installed %d admission policies and their bindings", len(set.Policies))
	return nil
}

// apply applies obj server-side as FieldManager.
func apply(ctx context.Context, c client.Client, obj client.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// clearStatus removes KubeFed's status from every federated resource:
// Fedwarden writes its own, and KubeFed's conditions lack the reason that
// Fedwarden's schema requires, so a status write merged into them would
// be refused. KubeFed writes its status again after a rollback.
func (h *Host) clearStatus(ctx context.Context, p *Plan, _ *state) error {
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":null}`))
	for _, m := range p.types {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(m.typ.FederatedGroupVersionKind().GroupVersion().WithKind(m.typ.FederatedKind() + "List"))
		if err := c.List(ctx, l); err != nil {
			return fmt.Errorf("listing %s: %w", m.typ.FederatedKind(), err)
		}
		cleared := 0
		for i := range l.Items {
			u := &l.Items[i]
			if _, has := u.Object["status"]; !has {
				continue
			}
			if err := c.Status().Patch(ctx, u, patch); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("clearing KubeFed's status of %s %s/%s: %w", m.typ.FederatedKind(), u.GetNamespace(), u.GetName(), err)
			}
			cleared++
		}
		if cleared > 0 {
			h.progress("cleared KubeFed's status of %d %s", cleared, m.typ.FederatedKind())
		}
	}
	return nil
}

// createTypeConfigs creates Fedwarden's FederatedTypeConfigs.
func (h *Host) createTypeConfigs(ctx context.Context, p *Plan, _ *state) error {
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	for _, m := range p.types {
		if err := apply(ctx, c, m.ftc); err != nil {
			return err
		}
		h.progress("created FederatedTypeConfig %s (propagation %s)", m.ftc.Name, m.ftc.Spec.Propagation)
	}
	return nil
}

// createClusters creates a FederatedCluster per KubeFedCluster. One that
// keeps KubeFed's identity uses KubeFed's Secret, bound to it: the
// Secret's data is neither read out nor changed, only its annotations are
// patched. One re-joined uses a credentials Secret holding the token of
// Fedwarden's identity, created and bound as `fedwarden join` does, and
// owned by the FederatedCluster; KubeFed's Secret is left as it is.
func (h *Host) createClusters(ctx context.Context, p *Plan, tokens map[string][]byte) error {
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	ns := p.Inventory.Namespace
	for _, m := range p.clusters {
		if m.rejoin != nil {
			if err := h.createRejoinedCluster(ctx, c, m, tokens[m.cluster.Name]); err != nil {
				return err
			}
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": m.binding}})
		if err != nil {
			return err
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.secret}}
		if err := c.Patch(ctx, secret, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("binding Secret %s/%s to cluster %s: %w", ns, m.secret, m.cluster.Name, err)
		}
		if err := apply(ctx, c, m.cluster); err != nil {
			return err
		}
		h.progress("created FederatedCluster %s (endpoint %s, Secret %s/%s bound to it)", m.cluster.Name, m.cluster.Spec.APIEndpoint, ns, m.secret)
	}
	return nil
}

// ownerFieldManager owns the owner reference of a re-joined cluster's
// credentials Secret, as `fedwarden join` gives it a manager of its own.
const ownerFieldManager = FieldManager + "-owner"

// createRejoinedCluster creates the credentials Secret holding token and
// the FederatedCluster of m that uses it, then makes the FederatedCluster
// own the Secret.
func (h *Host) createRejoinedCluster(ctx context.Context, c client.Client, m *clusterMapping, token []byte) error {
	if len(token) == 0 {
		return fmt.Errorf("cluster %s: no token of Fedwarden's identity", m.cluster.Name)
	}
	spec := m.rejoin.spec
	objs := registration.NewHost(spec, registration.Credentials{Token: token, CA: m.ca})
	if err := apply(ctx, c, objs.Credentials); err != nil {
		return err
	}
	cluster := m.cluster.DeepCopy()
	cluster.Spec.SecretRef = &corev1beta1.LocalSecretReference{Name: objs.Credentials.Name}
	if err := apply(ctx, c, cluster); err != nil {
		return err
	}
	applied := &corev1beta1.FederatedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: cluster.Name}, applied); err != nil {
		return fmt.Errorf("reading FederatedCluster %s: %w", cluster.Name, err)
	}
	owner, err := runtime.DefaultUnstructuredConverter.ToUnstructured(registration.CredentialsOwner(spec, applied))
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: owner}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(ownerFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("making FederatedCluster %s the owner of Secret %s/%s: %w", cluster.Name, spec.Namespace, objs.Credentials.Name, err)
	}
	h.progress("created FederatedCluster %s (endpoint %s, Secret %s/%s of Fedwarden's identity bound to it; KubeFed's Secret %s left as it is)",
		cluster.Name, cluster.Spec.APIEndpoint, spec.Namespace, objs.Credentials.Name, m.secret)
	return nil
}
