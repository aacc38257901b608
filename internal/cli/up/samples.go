package up

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/manifest"
)

//go:embed samples.yaml
var samples []byte

// applySamples applies the samples with server-side apply and waits until
// the sample Deployment is in sync in every member.
func (b *bringer) applySamples(ctx context.Context) error {
	c, err := client.New(b.fed.Host.Config, client.Options{})
	if err != nil {
		return fmt.Errorf("creating a client of the host: %w", err)
	}
	objs, err := manifest.Decode("samples.yaml", samples)
	if err != nil {
		return fmt.Errorf("reading the samples: %w", err)
	}
	for _, m := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(m.Obj), client.FieldOwner("fedwarden-up"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", m.Obj.GetKind(), m.Obj.GetName(), err)
		}
	}
	return b.waitInSync(ctx, c, "demo", "deployment-web")
}

// waitInSync waits until the CPV namespace/name has every member InSync.
func (b *bringer) waitInSync(ctx context.Context, c client.Client, namespace, name string) error {
	var last string
	for {
		cpv := &unstructured.Unstructured{}
		cpv.SetAPIVersion(typesv1beta1.GroupVersion.String())
		cpv.SetKind("ClusterPropagatedVersion")
		err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cpv)
		if err == nil {
			entries, _, _ := unstructured.NestedSlice(cpv.Object, "status", "clusterVersions")
			inSync := 0
			for _, e := range entries {
				if m, ok := e.(map[string]any); ok && m["state"] == string(typesv1beta1.InSync) {
					inSync++
				}
			}
			if inSync == len(b.fed.Members) {
				return nil
			}
			last = fmt.Sprintf("%d of %d members in sync", inSync, len(b.fed.Members))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the sample to reach every member (%s): %w", last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
