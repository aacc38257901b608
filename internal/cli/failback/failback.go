// Package failback implements `fedwarden failback`: it asks the control
// plane to return the replicas of a federated resource's failed-over
// clusters, under a failover policy whose failback is Manual.
package failback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// options are the flags and argument of failback.
type options struct {
	ref          kindref.Ref
	namespace    string
	clusters     []string
	controlPlane string
	host         kubeconfig.Source
	timeout      time.Duration
}

const long = `Failback returns the replicas of a federated resource's failed-over clusters
(spec.placement.failover, docs/failover.md) when its failback is Manual: a
failed cluster's replicas then stay on the other clusters until this command
asks for them. --cluster returns those of the clusters named (repeat it);
without it, of every failed-over cluster.

It sets the resource's annotations fedwarden.io/failback-requested (the
current time, RFC 3339) and fedwarden.io/failback-clusters. A cluster's
replicas return once it is Ready, and its copy InSync and Healthy, for the
policy's failbackAfterSeconds: the other clusters scale down only then. A
request counts for the clusters that failed over before it: a cluster that
fails again afterwards waits for a new one.

It reads the resource and its ClusterPropagatedVersion first, and refuses
(exit 1, nothing written) a resource whose failback is not Manual, and one
none of whose clusters asked for is failed over. It writes with your own
identity: patch on the federated resource.

Exit codes: 0 requested, 1 error, 2 bad flags or arguments, or a kind that
is not federated.`

const example = `  # Return the replicas of every failed-over cluster of web
  fedwarden failback fdeploy/web -n shop

  # Only cluster eu-2's
  fedwarden failback fdeploy/web -n shop --cluster eu-2`

// NewCommand returns `fedwarden failback`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "failback KIND/NAME [--cluster CLUSTER]...",
		Short:   "Return the replicas of a resource's failed-over clusters (failback Manual)",
		Long:    long,
		Example: example,
	})
	cmdline.OneParsed(cmd, "the federated resource, as KIND/NAME", kindref.ParseRef, &o.ref, func(ctx context.Context) error {
		return run(ctx, s, o)
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the federated resource (default the context's namespace, else default)")
	f.StringArrayVar(&o.clusters, "cluster", nil, "a failed-over cluster whose replicas return; repeat it for several (default all)")
	f.StringVar(&o.controlPlane, "control-plane-namespace", corev1beta1.DefaultFederationNamespace,
		"control-plane namespace of the host: the ClusterPropagatedVersions of cluster-scoped federated resources")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long any one request to the host may take")
	return cmd
}

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	errs := []error{cmdline.PositiveDuration("--timeout", o.timeout)}
	for _, c := range o.clusters {
		if msgs := validation.IsDNS1123Subdomain(c); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--cluster %q is not a cluster name: %s", c, strings.Join(msgs, "; ")))
		}
	}
	if msgs := validation.IsDNS1123Label(o.controlPlane); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--control-plane-namespace %q is not a namespace name: %s", o.controlPlane, strings.Join(msgs, "; ")))
	}
	return errors.Join(errs...)
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	target, err := kindref.Open(ctx, o.host, o.ref, o.namespace, o.timeout)
	if err != nil {
		return err
	}
	c, kind, key := target.Client, target.Kind, target.Key
	fed, err := kind.Get(ctx, c, key)
	if err != nil {
		return err
	}
	describe := kind.Type.Federated.Kind + " " + cache.ObjectName(key).String()
	if err := manual(fed); err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	cpvNamespace := key.Namespace
	if cpvNamespace == "" {
		cpvNamespace = o.controlPlane
	}
	failed, err := failedOver(ctx, c, propagation.CPVKey(kind.Type, fed, cpvNamespace))
	if err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	asked, err := chosen(failed, o.clusters)
	if err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	if err := request(ctx, c, fed, o.clusters, time.Now()); err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	_, err = fmt.Fprintf(s.Out, "%s: failback requested for %s; the replicas return once the cluster is Ready, and its copy InSync and Healthy, for failbackAfterSeconds\n",
		describe, strings.Join(asked, ", "))
	return err
}

// manual refuses a resource whose failback is not Manual: the command
// would change nothing.
func manual(fed *unstructured.Unstructured) error {
	spec, err := render.ParseSpec(fed)
	if err != nil {
		return err
	}
	switch f := spec.Placement.Failover; {
	case f == nil:
		return errors.New("it has no failover policy (spec.placement.failover): no cluster of it fails over, so there is nothing to fail back")
	case f.Failback != typesv1beta1.FailbackManual:
		return errors.New("its failback is Automatic: the replicas return by themselves once the cluster is Ready, and its copy InSync and Healthy, for failbackAfterSeconds; nothing was written")
	}
	return nil
}

// failedOver returns the clusters the ClusterPropagatedVersion at key
// records as failed over, with when.
func failedOver(ctx context.Context, c client.Reader, key types.NamespacedName) (map[string]string, error) {
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	err := c.Get(ctx, key, cpv)
	switch {
	case apierrors.IsNotFound(err):
		return nil, errors.New("it has no ClusterPropagatedVersion yet: it was never placed, so no cluster of it is failed over")
	case err != nil:
		return nil, fmt.Errorf("reading ClusterPropagatedVersion %s: %w", cache.ObjectName(key), err)
	}
	out := map[string]string{}
	for _, pc := range cpv.Spec.Clusters {
		if pc.FailedOverAt != nil {
			out[string(pc.Name)] = pc.FailedOverAt.UTC().Format(time.RFC3339)
		}
	}
	return out, nil
}

// chosen describes the failed-over clusters asked for (all when asked is
// empty); an error when one asked for is not failed over, or none is.
func chosen(failed map[string]string, asked []string) ([]string, error) {
	var names []string
	for name := range failed {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, errors.New("no cluster of it is failed over: there is nothing to fail back")
	}
	if len(asked) == 0 {
		asked = names
	}
	var out, notFailed []string
	for _, name := range asked {
		at, ok := failed[name]
		if !ok {
			notFailed = append(notFailed, name)
			continue
		}
		out = append(out, fmt.Sprintf("cluster %s (failed over at %s)", name, at))
	}
	if len(notFailed) > 0 {
		return nil, fmt.Errorf("cluster %s is not failed over (those failed over: %s): nothing was written", strings.Join(notFailed, ", "), strings.Join(names, ", "))
	}
	return out, nil
}

// request sets the failback annotations of fed: now, and the clusters (all
// when none is named).
func request(ctx context.Context, c client.Client, fed *unstructured.Unstructured, clusters []string, now time.Time) error {
	var names any // null removes an earlier request's list: all clusters
	if len(clusters) > 0 {
		names = strings.Join(clusters, ",")
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		typesv1beta1.AnnotationFailbackRequested: now.UTC().Format(time.RFC3339),
		typesv1beta1.AnnotationFailbackClusters:  names,
	}}})
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(fed.GroupVersionKind())
	obj.SetNamespace(fed.GetNamespace())
	obj.SetName(fed.GetName())
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating it: %w", err)
	}
	return nil
}
