package federate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// federator federates objects of one host.
type federator struct {
	host  manifest.Applier
	disco federatedtype.Discovery
	out   io.Writer // progress
}

func newFederator(s streams.IO, host *kubeconfig.Cluster, timeout time.Duration) (*federator, error) {
	c, disco, err := host.Clients(timeout)
	if err != nil {
		return nil, err
	}
	return &federator{host: manifest.Applier{Client: c}, disco: disco, out: s.ErrOut}, nil
}

// resolve finds the kind, its FederatedTypeConfig and the object that o
// name. An unknown kind, a kind not enabled and a missing object are usage
// errors.
func (f *federator) resolve(ctx context.Context, o *options) (federatedResource, error) {
	ftc, err := f.typeConfig(ctx, o.resource)
	if err != nil {
		return federatedResource{}, err
	}
	t, fed := ftc.Spec.TargetType, ftc.Spec.FederatedType
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: t.Group, Version: t.Version, Kind: t.Kind})
	key := client.ObjectKey{Name: o.name}
	if t.Scope == corev1beta1.NamespaceScoped {
		if key.Namespace, err = namespace(o); err != nil {
			return federatedResource{}, err
		}
	}
	if err := f.host.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return federatedResource{}, streams.UsageError(fmt.Errorf("%s %s is not in the host", t.Kind, cache.ObjectName(key)))
		}
		return federatedResource{}, fmt.Errorf("reading %s %s: %w", t.Kind, cache.ObjectName(key), err)
	}
	r := federatedResource{
		gvk:       schema.GroupVersionKind{Group: fed.Group, Version: fed.Version, Kind: fed.Kind},
		name:      o.name,
		object:    obj,
		placement: newPlacement(o.clusters, o.selector, o.all),
	}
	switch {
	case t.Group == "" && t.Kind == "Namespace":
		r.namespace = o.name // a FederatedNamespace lives in the namespace it federates
	case fed.Scope == corev1beta1.NamespaceScoped:
		r.namespace = key.Namespace
	}
	return r, nil
}

// typeConfig returns the FederatedTypeConfig of the kind arg names.
func (f *federator) typeConfig(ctx context.Context, arg string) (*corev1beta1.FederatedTypeConfig, error) {
	target, err := federatedtype.Resolve(ctx, f.disco, arg, "")
	switch {
	case errors.Is(err, federatedtype.ErrUnknownResource):
		return nil, streams.UsageError(err)
	case err != nil:
		return nil, err
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	err = f.host.Client.Get(ctx, client.ObjectKey{Name: target.Resource()}, ftc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, streams.UsageError(fmt.Errorf("%s is not enabled: there is no FederatedTypeConfig %s; run `fedwarden enable %s` first",
			target.Resource(), target.Resource(), target.Resource()))
	case err != nil:
		return nil, fmt.Errorf("reading FederatedTypeConfig %s: %w", target.Resource(), err)
	}
	if ftc.Spec.Propagation == corev1beta1.Disabled {
		fmt.Fprintf(f.out, "warning: propagation of %s is Disabled: `fedwarden enable %s` turns it on\n", ftc.Name, ftc.Name)
	}
	return ftc, nil
}

// namespace returns -n, else the namespace of the host's context.
func namespace(o *options) (string, error) {
	return kubeconfig.Namespace(o.namespace, o.host)
}

// apply applies the Federated<Kind>.
func (f *federator) apply(ctx context.Context, fed *unstructured.Unstructured) error {
	outcome, err := f.host.Apply(ctx, fed, fieldOwner)
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%w: the host does not serve %s; is its CRD installed? `fedwarden enable` installs it", err, fed.GroupVersionKind())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(f.out, "%s %s\n", outcome, manifest.Describe(fed))
	return nil
}
