package disable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// Waiting for a CRD to be deleted.
const (
	deletePollInterval = 250 * time.Millisecond
	// maxListed bounds the resources an error names.
	maxListed = 5
)

var crdGVK = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

// disabler disables types in one host.
type disabler struct {
	host    manifest.Applier
	disco   federatedtype.Discovery
	out     io.Writer // progress
	timeout time.Duration
}

func newDisabler(s streams.IO, host *kubeconfig.Cluster, timeout time.Duration) (*disabler, error) {
	c, disco, err := host.Clients(timeout)
	if err != nil {
		return nil, err
	}
	return &disabler{host: manifest.Applier{Client: c}, disco: disco, out: s.ErrOut, timeout: timeout}, nil
}

// fedType is the type disable acts on.
type fedType struct {
	// ftc is the FederatedTypeConfig; nil when there is none any more.
	ftc *corev1beta1.FederatedTypeConfig
	typ federatedtype.Type
}

func (f *fedType) name() string { return f.typ.Target.Resource() }

// find returns the type arg names: a FederatedTypeConfig's name, its
// target's resource[.group] or kind, or anything discovery resolves to
// them. A type without a FederatedTypeConfig is returned only when the
// host serves its kind (its CRD may remain).
func (d *disabler) find(ctx context.Context, arg string) (*fedType, error) {
	list := &corev1beta1.FederatedTypeConfigList{}
	if err := d.host.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing FederatedTypeConfigs: %w", err)
	}
	if ftc := matchTypeConfig(list.Items, arg); ftc != nil {
		return fromTypeConfig(ftc), nil
	}
	target, err := federatedtype.Resolve(ctx, d.disco, arg, "")
	switch {
	case errors.Is(err, federatedtype.ErrUnknownResource):
		return nil, streams.UsageError(fmt.Errorf("%w; enabled types: %s", err, enabled(list.Items)))
	case err != nil:
		return nil, err
	}
	if ftc := matchTypeConfig(list.Items, target.Resource()); ftc != nil {
		return fromTypeConfig(ftc), nil
	}
	return &fedType{typ: federatedtype.Type{Target: target}}, nil
}

// matchTypeConfig returns the FederatedTypeConfig arg names, or nil.
func matchTypeConfig(ftcs []corev1beta1.FederatedTypeConfig, arg string) *corev1beta1.FederatedTypeConfig {
	arg = strings.ToLower(arg)
	for i, ftc := range ftcs {
		t := ftc.Spec.TargetType
		names := []string{ftc.Name, t.PluralName, strings.ToLower(t.Kind)}
		if t.Group != "" {
			names = append(names, t.PluralName+"."+t.Group, strings.ToLower(t.Kind)+"."+t.Group)
		}
		if slices.Contains(names, arg) {
			return &ftcs[i]
		}
	}
	return nil
}

func fromTypeConfig(ftc *corev1beta1.FederatedTypeConfig) *fedType {
	t, f := ftc.Spec.TargetType, ftc.Spec.FederatedType
	return &fedType{ftc: ftc, typ: federatedtype.Type{
		Target:           federatedtype.Target{Group: t.Group, Version: t.Version, Kind: t.Kind, Plural: t.PluralName, Namespaced: t.Scope == corev1beta1.NamespaceScoped},
		FederatedGroup:   f.Group,
		FederatedVersion: f.Version,
	}}
}

// enabled lists the names of ftcs.
func enabled(ftcs []corev1beta1.FederatedTypeConfig) string {
	if len(ftcs) == 0 {
		return "none"
	}
	names := make([]string, 0, len(ftcs))
	for _, ftc := range ftcs {
		names = append(names, ftc.Name)
	}
	return strings.Join(names, ", ")
}

// notEnabled is the usage error of a type without FederatedTypeConfig.
func notEnabled(ft *fedType) error {
	return streams.UsageError(fmt.Errorf("%s is not enabled: there is no FederatedTypeConfig %s", ft.name(), ft.name()))
}

// disable sets spec.propagation to Disabled.
func (d *disabler) disable(ctx context.Context, ft *fedType) error {
	if ft.ftc == nil {
		return notEnabled(ft)
	}
	if ft.ftc.Spec.Propagation == corev1beta1.Disabled {
		fmt.Fprintf(d.out, "%s: propagation is already Disabled in FederatedTypeConfig %s\n", ft.name(), ft.ftc.Name)
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": corev1beta1.GroupVersion.String(),
		"kind":       "FederatedTypeConfig",
		"metadata":   map[string]any{"name": ft.ftc.Name},
		"spec":       map[string]any{"propagation": string(corev1beta1.Disabled)},
	}}
	if _, err := d.host.Apply(ctx, u, fieldOwner); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%s: propagation Disabled in FederatedTypeConfig %s\n", ft.name(), ft.ftc.Name)
	fmt.Fprintf(d.out, "%s: copies in member clusters are left as they are (neither updated nor deleted), and %s resources stay in the host; "+
		"`fedwarden enable %s` propagates them again\n", ft.name(), ft.typ.FederatedKind(), ft.name())
	return nil
}

// deleteTypeConfig deletes the FederatedTypeConfig, leaving the CRD and
// its resources, and the member copies.
func (d *disabler) deleteTypeConfig(ctx context.Context, ft *fedType) error {
	if err := d.deleteTypeConfigOnly(ctx, ft); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%s: copies in member clusters are left as they are\n", ft.name())
	exists, err := d.crdExists(ctx, ft)
	if err != nil || !exists {
		return err
	}
	objs, err := d.federatedResources(ctx, ft)
	if err != nil {
		return err
	}
	if len(objs) > 0 {
		fmt.Fprintf(d.out, "%s: %s in the host and no longer propagated%s\n",
			ft.name(), count(len(objs), ft.typ.FederatedKind(), "remains", "remain"), finalizerNote(objs))
	}
	return nil
}

// deleteTypeConfigOnly deletes the FederatedTypeConfig.
func (d *disabler) deleteTypeConfigOnly(ctx context.Context, ft *fedType) error {
	if ft.ftc == nil {
		return notEnabled(ft)
	}
	if err := d.host.Client.Delete(ctx, ft.ftc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting FederatedTypeConfig %s: %w", ft.ftc.Name, err)
	}
	fmt.Fprintf(d.out, "%s: deleted FederatedTypeConfig %s\n", ft.name(), ft.ftc.Name)
	return nil
}

// deleteAll deletes the CRD, then the FederatedTypeConfig. While
// Federated<Kind> resources exist it refuses, unless force; with force, it
// waits until the CRD is gone before deleting the FederatedTypeConfig, so
// that the controller can finish their deletion.
func (d *disabler) deleteAll(ctx context.Context, ft *fedType, force bool) error {
	shipped, err := federatedtype.Shipped(ft.typ)
	if err != nil {
		return err
	}
	if shipped != nil {
		return streams.UsageError(fmt.Errorf("--delete-crd: CustomResourceDefinition %s ships with Fedwarden and is not deleted; "+
			"--delete deletes the FederatedTypeConfig only", shipped.Name))
	}
	exists, err := d.crdExists(ctx, ft)
	if err != nil {
		return err
	}
	if !exists && ft.ftc == nil {
		return notEnabled(ft)
	}
	if exists {
		if err := d.deleteCRD(ctx, ft, force); err != nil {
			return err
		}
	}
	if ft.ftc == nil {
		return nil
	}
	return d.deleteTypeConfigOnly(ctx, ft)
}

// deleteCRD deletes the Federated<Kind> CRD, refusing while resources of
// it exist unless force.
func (d *disabler) deleteCRD(ctx context.Context, ft *fedType, force bool) error {
	objs, err := d.federatedResources(ctx, ft)
	if err != nil {
		return err
	}
	if len(objs) > 0 && !force {
		return fmt.Errorf("%s in the host (%s): deleting CustomResourceDefinition %s deletes them all, "+
			"and Fedwarden then deletes their copies in member clusters, unless they carry the annotation %s: \"true\"; "+
			"delete them first, or pass --force", count(len(objs), ft.typ.FederatedKind(), "exists", "exist"), names(objs), ft.typ.CRDName(), typesv1beta1.AnnotationOrphan)
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	crd.SetName(ft.typ.CRDName())
	if err := d.host.Client.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting CustomResourceDefinition %s: %w", crd.GetName(), err)
	}
	fmt.Fprintf(d.out, "%s: deleted CustomResourceDefinition %s\n", ft.name(), crd.GetName())
	if len(objs) == 0 {
		return nil
	}
	return d.waitGone(ctx, ft, len(objs))
}

// waitGone waits until the CRD is gone, which happens once its resources'
// finalizers are removed.
func (d *disabler) waitGone(ctx context.Context, ft *fedType, n int) error {
	fmt.Fprintf(d.out, "%s: waiting up to %s for %s to be deleted\n", ft.name(), d.timeout, count(n, ft.typ.FederatedKind(), "", ""))
	err := wait.PollUntilContextTimeout(ctx, deletePollInterval, d.timeout, true, func(ctx context.Context) (bool, error) {
		exists, err := d.crdExists(ctx, ft)
		return err == nil && !exists, nil
	})
	if err == nil {
		return nil
	}
	kept := ""
	if ft.ftc != nil {
		kept = fmt.Sprintf("; FederatedTypeConfig %s is kept so that it can", ft.ftc.Name)
	}
	return fmt.Errorf("CustomResourceDefinition %s is still being deleted after %s: its resources wait for their finalizer %s, "+
		"which the controller-manager removes (is it running?)%s", ft.typ.CRDName(), d.timeout, typesv1beta1.FinalizerSync, kept)
}

func (d *disabler) crdExists(ctx context.Context, ft *fedType) (bool, error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(crdGVK)
	err := d.host.Client.Get(ctx, client.ObjectKey{Name: ft.typ.CRDName()}, crd)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading CustomResourceDefinition %s: %w", ft.typ.CRDName(), err)
	}
	return true, nil
}

// federatedResources lists the metadata of every Federated<Kind> in the host.
func (d *disabler) federatedResources(ctx context.Context, ft *fedType) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	gvk := ft.typ.FederatedGroupVersionKind()
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind + "List"})
	if err := d.host.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing %s resources: %w", gvk.Kind, err)
	}
	return list.Items, nil
}

// names names the first few of objs.
func names(objs []metav1.PartialObjectMetadata) string {
	var out []string
	for _, o := range objs[:min(len(objs), maxListed)] {
		if o.Namespace == "" {
			out = append(out, o.Name)
		} else {
			out = append(out, o.Namespace+"/"+o.Name)
		}
	}
	if len(objs) > maxListed {
		out = append(out, "…")
	}
	return strings.Join(out, ", ")
}

// count says how many resources of kind there are, with the verb in the
// singular or plural: "1 FederatedConfigMap resource exists".
func count(n int, kind, singular, plural string) string {
	noun, verb := "resources", plural
	if n == 1 {
		noun, verb = "resource", singular
	}
	if verb == "" {
		return fmt.Sprintf("%d %s %s", n, kind, noun)
	}
	return fmt.Sprintf("%d %s %s %s", n, kind, noun, verb)
}

// finalizerNote says that resources holding the sync finalizer are released
// by the controller-manager, and their member copies then kept.
func finalizerNote(objs []metav1.PartialObjectMetadata) string {
	n := 0
	for _, o := range objs {
		if slices.Contains(o.Finalizers, typesv1beta1.FinalizerSync) {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of them hold the finalizer %s, which the controller-manager removes now that the type is not propagated: deleting them afterwards leaves their member copies", n, typesv1beta1.FinalizerSync)
}
