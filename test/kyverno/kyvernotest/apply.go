package kyvernotest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Manifests are objects read from YAML files, to create in a cluster.
type Manifests []*unstructured.Unstructured

// Read reads every object of the YAML files at paths.
func Read(paths ...string) (Manifests, error) {
	var objs Manifests
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			err := dec.Decode(&obj.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
			if len(obj.Object) > 0 {
				objs = append(objs, obj)
			}
		}
	}
	return objs, nil
}

// Cluster creates and deletes objects of any kind a cluster serves.
type Cluster struct {
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
}

// NewCluster returns a Cluster for cfg.
func NewCluster(cfg *rest.Config) (*Cluster, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Resource returns the client of obj's resource, in obj's namespace when
// the resource is namespaced.
func (c *Cluster) Resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset() // a CRD created since the mapper last looked
		mapping, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
	}
	return c.dyn.Resource(mapping.Resource), nil
}

// Create creates every object.
func (c *Cluster) Create(ctx context.Context, objs Manifests) error {
	for _, obj := range objs {
		r, err := c.Resource(obj)
		if err != nil {
			return err
		}
		if _, err := r.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// Delete deletes every object and waits until they are gone.
func (c *Cluster) Delete(ctx context.Context, objs Manifests) error {
	for _, obj := range objs {
		r, err := c.Resource(obj)
		if err != nil {
			return err
		}
		if err := r.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := r.Get(ctx, obj.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s %s to go: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// WaitReady waits until Kyverno says that each policy among objs is ready
// (compiled, its webhooks configured); other objects are not waited for.
func (c *Cluster) WaitReady(ctx context.Context, objs Manifests, timeout time.Duration) error {
	for _, obj := range objs {
		if !isPolicy(obj) {
			continue
		}
		r, err := c.Resource(obj)
		if err != nil {
			return err
		}
		var last *unstructured.Unstructured
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			got, err := r.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = got
			return policyReady(got), nil
		})
		if err != nil {
			status := any(nil)
			if last != nil {
				status = last.Object["status"]
			}
			return fmt.Errorf("%s %s is not ready: %w; status: %v", obj.GetKind(), obj.GetName(), err, status)
		}
	}
	return nil
}

func isPolicy(obj *unstructured.Unstructured) bool {
	switch obj.GroupVersionKind().Group {
	case "kyverno.io", "policies.kyverno.io":
		return true
	}
	return false
}

// policyReady reads the readiness of a Kyverno policy: status.conditionStatus.ready
// for policies.kyverno.io, the Ready condition for kyverno.io.
func policyReady(obj *unstructured.Unstructured) bool {
	if ready, found, _ := unstructured.NestedBool(obj.Object, "status", "conditionStatus", "ready"); found {
		return ready
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}
