// Package resync implements `fedwarden resync`: it asks the control plane
// to re-apply a federated resource to every cluster it is placed on, by
// setting the resource's kubefed.io/resync annotation.
package resync

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// options are the flags and argument of resync.
type options struct {
	ref       kindref.Ref
	namespace string
	host      kubeconfig.Source
	timeout   time.Duration
}

const long = `Resync asks the control plane to write a federated resource to every member
cluster it is placed on again, even where the member's copy carries the current
template and override versions: a copy edited out of band under a drift policy
of Alert, or one whose write failed, is then put back as the host says.

It sets the annotation kubefed.io/resync of the federated resource to the
current time (RFC 3339, UTC); the controller acts on each new value once and
records it in the ClusterPropagatedVersion's status.resync. Watch the result
with 'fedwarden drift' or 'fedwarden diff'.

KIND is the federated kind as kubectl takes it: FederatedDeployment,
federateddeployments, fdeploy, federateddeployments.types.kubefed.io, or the
kind it federates (deployment, deploy). -n defaults to the namespace of the
host's context; it is ignored for cluster-scoped federated kinds.

Exit codes: 0 requested, 1 error (such as a resource that does not exist),
2 bad flags or arguments, or a kind that is not federated.`

const example = `  # Re-apply the FederatedDeployment web of namespace shop everywhere
  fedwarden resync federateddeployment/web -n shop

  # The same, naming the target kind
  fedwarden resync deployment/web -n shop`

// NewCommand returns `fedwarden resync`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "resync KIND/NAME",
		Short:   "Re-apply a federated resource to every cluster it is placed on",
		Long:    long,
		Example: example,
	})
	cmdline.OneParsed(cmd, "the federated resource, as KIND/NAME", kindref.ParseRef, &o.ref, func(ctx context.Context) error {
		return run(ctx, s, o)
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the federated resource (default the context's namespace, else default)")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long any one request to the host may take")
	return cmd
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := cmdline.PositiveDuration("--timeout", o.timeout); err != nil {
		return streams.UsageError(err)
	}
	target, err := kindref.Open(ctx, o.host, o.ref, o.namespace, o.timeout)
	if err != nil {
		return err
	}
	c, kind, key := target.Client, target.Kind, target.Key
	if err := request(ctx, c, kind, key, time.Now()); err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.Out, "%s: resync requested\n", kind.Describe(key.Name))
	return err
}

// request sets the resync annotation of the resource at key to now, with a
// merge patch, which fails on a resource that does not exist.
func request(ctx context.Context, c client.Client, kind kindref.Kind, key client.ObjectKey, now time.Time) error {
	patch, err := annotationPatch(now)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(kind.Type.Federated)
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	err = c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s not found in the host", kind.Type.Federated.Kind, cache.ObjectName(key))
	case err != nil:
		return fmt.Errorf("annotating %s %s: %w", kind.Type.Federated.Kind, cache.ObjectName(key), err)
	}
	return nil
}

// annotationPatch is the merge patch that sets the resync annotation to now.
func annotationPatch(now time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]string{typesv1beta1.AnnotationResync: now.UTC().Format(time.RFC3339Nano)},
		},
	})
}
