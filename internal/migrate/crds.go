package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/fedwarden/fedwarden/internal/federatedtype"
)

// crdPollInterval is how often a CRD is read while waiting for it.
const crdPollInterval = 250 * time.Millisecond

// crdAPI is what the handover needs of the host's CRD client.
type crdAPI = apiextensionsclient.CustomResourceDefinitionInterface

// fedwardenCRD returns the CRD of a federated kind as `fedwarden enable`
// makes it: the one Fedwarden ships, or one whose spec.template schema
// comes from the host's OpenAPI document (any field, when it has none).
func fedwardenCRD(ctx context.Context, disco federatedtype.Discovery, typ federatedtype.Type) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, err := federatedtype.Shipped(typ)
	if err != nil || crd != nil {
		return crd, err
	}
	template, err := federatedtype.FetchTemplateSchema(ctx, disco, typ.Target)
	switch {
	case errors.Is(err, federatedtype.ErrNoOpenAPI):
		template = nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", typ.Target.Resource(), err)
	}
	return federatedtype.NewCRD(typ, template)
}

// replaceCRD makes want the host's CRD of its name, keeping every object:
// it updates an existing CRD in place (same versions, same scope: the
// objects stay in storage), or creates it.
func replaceCRD(ctx context.Context, api crdAPI, want *apiextensionsv1.CustomResourceDefinition) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, fresh(want), metav1.CreateOptions{})
			return wrapCRD("creating", want.Name, err)
		}
		if err != nil {
			return wrapCRD("reading", want.Name, err)
		}
		if current.Spec.Scope != want.Spec.Scope {
			return fmt.Errorf("CustomResourceDefinition %s is %s, the one to install %s: a CRD's scope cannot change with objects in place", want.Name, current.Spec.Scope, want.Spec.Scope)
		}
		update := fresh(want)
		update.ResourceVersion = current.ResourceVersion
		_, err = api.Update(ctx, update, metav1.UpdateOptions{})
		return wrapCRD("replacing", want.Name, err)
	})
}

// fresh is want as it is written: without what the server sets.
func fresh(want *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	c := want.DeepCopy()
	c.ResourceVersion, c.UID, c.CreationTimestamp, c.ManagedFields = "", "", metav1.Time{}, nil
	c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	return c
}

func wrapCRD(doing, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s CustomResourceDefinition %s: %w", doing, name, err)
}

// deleteCRD deletes the CRD name and waits until it is gone, with its
// objects; the objects must have no finalizers left.
func deleteCRD(ctx context.Context, api crdAPI, name string, timeout time.Duration) error {
	err := api.Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return wrapCRD("deleting", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, crdPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	return wrapCRD("waiting for the deletion of", name, err)
}

// waitEstablished waits until the CRD name is Established.
func waitEstablished(ctx context.Context, api crdAPI, name string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, crdPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		crd, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established {
				return c.Status == apiextensionsv1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	return wrapCRD("waiting until Established:", name, err)
}

// crdFrom decodes a saved CRD.
func crdFrom(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, crd); err != nil {
		return nil, fmt.Errorf("decoding a saved CustomResourceDefinition: %w", err)
	}
	return crd, nil
}

// crdMap encodes a CRD for the state.
func crdMap(crd *apiextensionsv1.CustomResourceDefinition) (map[string]any, error) {
	c := crd.DeepCopy()
	c.APIVersion, c.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("encoding CustomResourceDefinition %s: %w", crd.Name, err)
	}
	return stored(m), nil
}
