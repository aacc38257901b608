package join

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/manifest"
)

// applier applies objects to one side of a join, server-side, and reports
// what each apply did.
type applier struct {
	manifest.Applier           // its Side is "member" or "host"
	cluster          string    // the cluster being joined, prefixing every line
	out              io.Writer // progress
}

// apply applies obj as manager, taking over fields other managers own, and
// returns the object the server holds afterwards.
func (a *applier) apply(ctx context.Context, obj client.Object, manager string) (*unstructured.Unstructured, error) {
	u, err := manifest.From(obj)
	if err != nil {
		return nil, err
	}
	outcome, err := a.Apply(ctx, u, manager)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(a.out, "%s: %s %s on the %s\n", a.cluster, outcome, manifest.Describe(u), a.Side)
	return u, nil
}
