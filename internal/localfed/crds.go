package localfed

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/fedwarden/fedwarden/config/crd"
)

// installCRDs creates or updates Fedwarden's CRDs and waits until every one
// of them is Established and listed by discovery, so that clients that map
// kinds to resources through discovery can use them at once.
func installCRDs(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	crds, err := crd.Objects()
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, obj := range crds {
		if err := apply(ctx, api, obj); err != nil {
			return fmt.Errorf("installing CRD %s: %w", obj.Name, err)
		}
	}
	for _, obj := range crds {
		if err := waitEstablished(ctx, api, obj.Name, timeout); err != nil {
			return fmt.Errorf("installing CRD %s: waiting until Established: %w", obj.Name, err)
		}
	}
	if err := waitDiscoverable(ctx, disco, crds, timeout); err != nil {
		return fmt.Errorf("installing CRDs: waiting for discovery: %w", err)
	}
	return nil
}

// objectAPI is what apply needs of a typed client of one kind, such as
// the CRDs' or the ValidatingAdmissionPolicies'.
type objectAPI[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
}

// object is a typed object that apply can copy.
type object[T any] interface {
	metav1.Object
	DeepCopy() T
}

type crdAPI = objectAPI[*apiextensionsv1.CustomResourceDefinition]

// apply creates obj, or updates it if it already exists.
func apply[T object[T]](ctx context.Context, api objectAPI[T], obj T) error {
	_, err := api.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := api.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		update := obj.DeepCopy()
		update.SetResourceVersion(current.GetResourceVersion())
		_, err = api.Update(ctx, update, metav1.UpdateOptions{})
		return err
	})
}

// waitEstablished polls the CRD called name until its Established condition
// is True.
func waitEstablished(ctx context.Context, api crdAPI, name string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		obj, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return established(obj), nil
	})
}

func established(obj *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range obj.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// waitDiscoverable polls discovery, as RESTMappers read it, until it lists
// the resource of every CRD in every version the CRD serves.
func waitDiscoverable(ctx context.Context, disco discovery.DiscoveryInterface, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = discoverable(disco, crds)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last error: %v)", err, last)
	}
	return nil
}

func discoverable(disco discovery.DiscoveryInterface, crds []*apiextensionsv1.CustomResourceDefinition) error {
	_, lists, err := disco.ServerGroupsAndResources()
	if err != nil {
		return err
	}
	listed := map[string]bool{} // group/version/resource
	for _, list := range lists {
		for _, r := range list.APIResources {
			listed[list.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, obj := range crds {
		for _, version := range obj.Spec.Versions {
			gvr := obj.Spec.Group + "/" + version.Name + "/" + obj.Spec.Names.Plural
			if version.Served && !listed[gvr] {
				return fmt.Errorf("discovery does not list %s yet", gvr)
			}
		}
	}
	return nil
}
