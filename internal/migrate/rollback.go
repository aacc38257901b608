package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// errNothingToRollBack: there is no saved state.
var errNothingToRollBack = errors.New("nothing to roll back")

// fedwardenLeaseDuration is the lease duration of Fedwarden's
// controller-manager (controller-runtime's default).
const fedwardenLeaseDuration = 15 * time.Second

// RollbackOptions say what Rollback restores and what it waits for.
type RollbackOptions struct {
	// Namespace is the control-plane namespace holding the state.
	Namespace string
	// FedwardenLease names the leader Lease of Fedwarden's
	// controller-manager, which must have stopped.
	FedwardenLease string
	// StateDigest is the digest of the state that the handover printed:
	// Rollback restores nothing from a state of another digest.
	StateDigest string
}

// Rollback puts back what the handover saved: KubeFed's CRDs (every
// federated resource is kept), FederatedTypeConfigs and webhook
// configurations, and its controller-manager's replicas. It restores only
// those, by kind and name (see RollbackReview), and only from the state
// whose digest is o.StateDigest: everything is checked before anything is
// written, and a state that holds anything else is refused whole.
// Fedwarden's controller-manager must be stopped first: Rollback waits
// until its leader Lease is idle. Member copies are not touched; the
// FederatedClusters and the Secrets' binding annotations are left, as
// KubeFed ignores them. So is Fedwarden's own identity in the members that
// the handover re-joined (--rejoin), with its credentials Secret on the
// host: Rollback writes to no member, and KubeFed's own identity was left
// as it was.
func (h *Host) Rollback(ctx context.Context, o RollbackOptions) error {
	r, err := h.ReviewRollback(ctx, o.Namespace)
	if err != nil {
		return err
	}
	if err := r.Refusal(); err != nil {
		return err
	}
	if err := r.CheckDigest(o.StateDigest); err != nil {
		return err
	}
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	if err := waitLockIdle(ctx, c, o.Namespace, o.FedwardenLease, fedwardenLeaseDuration, h.StopTimeout); err != nil {
		return fmt.Errorf("waiting for Fedwarden's controller-manager to stop: %w", err)
	}
	h.progress("Fedwarden's leader Lease %s/%s is not renewed: its controller-manager has stopped", o.Namespace, o.FedwardenLease)
	st := r.saved.st
	phases := []func(context.Context, *state) error{h.dropFedwardenTypeConfigs, h.restoreCRDs, h.restoreTypeConfigs, h.restoreWebhooks}
	for _, phase := range phases {
		if err := phase(ctx, st); err != nil {
			return err
		}
	}
	if err := h.restartKubeFed(ctx, o.Namespace, st); err != nil {
		return err
	}
	for _, name := range st.Rejoined {
		h.progress("left Fedwarden's identity in cluster %s (ServiceAccount %s/%s, ClusterRole and ClusterRoleBinding %s) and Secret %s/%s: "+
			"KubeFed uses its own; remove them with 'fedwarden unjoin %s --cluster-context CONTEXT' once KubeFed is to stay", name, o.Namespace, registration.ServiceAccountName(name),
			registration.ClusterRoleName(name), o.Namespace, registration.CredentialsSecretName(name), name)
	}
	return h.deleteState(ctx, r.saved)
}

// deleteState deletes the object holding the state, once KubeFed is back,
// so that a later handover starts afresh. It deletes that very object
// (its UID), not one written in its place since.
func (h *Host) deleteState(ctx context.Context, saved *savedState) error {
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	uid := saved.obj.GetUID()
	if err := c.Delete(ctx, saved.obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", saved.source, err)
	}
	h.progress("deleted %s: KubeFed is back", saved.source)
	return nil
}

// savedCRDScope returns the scope of the saved CRD name, "" if none is
// saved.
func savedCRDScope(st *state, name string) string {
	for _, m := range st.CRDs {
		u := unstructured.Unstructured{Object: m}
		if u.GetName() == name {
			s, _, _ := unstructured.NestedString(m, "spec", "scope")
			return s
		}
	}
	return ""
}

// dropFedwardenTypeConfigs deletes Fedwarden's cluster-scoped
// FederatedTypeConfig CRD and its objects when KubeFed's, saved, is
// namespaced; their finalizers are removed first (Fedwarden is stopped).
func (h *Host) dropFedwardenTypeConfigs(ctx context.Context, st *state) error {
	current, err := h.CRDs.Get(ctx, typeConfigCRD, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return wrapCRD("reading", typeConfigCRD, err)
	}
	saved := savedCRDScope(st, typeConfigCRD)
	if saved == "" || saved == string(current.Spec.Scope) {
		return nil
	}
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	l := &corev1beta1.FederatedTypeConfigList{}
	if err := c.List(ctx, l); err != nil {
		return fmt.Errorf("listing FederatedTypeConfigs: %w", err)
	}
	for i := range l.Items {
		ftc := &l.Items[i]
		if err := c.Patch(ctx, ftc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of FederatedTypeConfig %s: %w", ftc.Name, err)
		}
	}
	if err := deleteCRD(ctx, h.CRDs, typeConfigCRD, h.Timeout); err != nil {
		return err
	}
	h.progress("deleted Fedwarden's CustomResourceDefinition %s and its %d FederatedTypeConfigs", typeConfigCRD, len(l.Items))
	return nil
}

// restoreCRDs puts KubeFed's saved CRDs back in place, keeping every
// object.
func (h *Host) restoreCRDs(ctx context.Context, st *state) error {
	for _, m := range st.CRDs {
		crd, err := crdFrom(m)
		if err != nil {
			return err
		}
		if err := replaceCRD(ctx, h.CRDs, crd); err != nil {
			return err
		}
		if err := waitEstablished(ctx, h.CRDs, crd.Name, h.Timeout); err != nil {
			return err
		}
		h.progress("restored KubeFed's CustomResourceDefinition %s", crd.Name)
	}
	return nil
}

// restoreTypeConfigs creates KubeFed's saved FederatedTypeConfigs.
func (h *Host) restoreTypeConfigs(ctx context.Context, st *state) error {
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	for _, m := range st.TypeConfigs {
		u := &unstructured.Unstructured{Object: m}
		if err := c.Create(ctx, u.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("restoring FederatedTypeConfig %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
	}
	if len(st.TypeConfigs) > 0 {
		h.progress("restored KubeFed's %d FederatedTypeConfigs", len(st.TypeConfigs))
	}
	return nil
}

// restoreWebhooks creates KubeFed's saved webhook configurations.
func (h *Host) restoreWebhooks(ctx context.Context, st *state) error {
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	for _, m := range st.Webhooks {
		u := &unstructured.Unstructured{Object: m}
		if err := c.Create(ctx, u.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("restoring %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		h.progress("restored %s %s", u.GetKind(), u.GetName())
	}
	return nil
}

// restartKubeFed scales KubeFed's controller-manager Deployment back.
func (h *Host) restartKubeFed(ctx context.Context, namespace string, st *state) error {
	if st.Replicas == nil {
		h.progress("no Deployment %s/%s was scaled down: start KubeFed's controller-manager yourself", namespace, ControllerDeployment)
		return nil
	}
	c, err := h.NewClient()
	if err != nil {
		return err
	}
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, *st.Replicas)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ControllerDeployment}}
	if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("scaling Deployment %s/%s back to %d: %w", namespace, ControllerDeployment, *st.Replicas, err)
	}
	h.progress("scaled Deployment %s/%s back to %d replicas", namespace, ControllerDeployment, *st.Replicas)
	return nil
}
