// Package rollout implements `fedwarden rollout status|pause|resume|undo|history`:
// like kubectl rollout, it follows, stops, starts and undoes the rollout of
// a federated resource's revisions across its member clusters, through the
// API the control plane's rollout engine reads (docs/rollout.md).
package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/propagation"
	engine "github.com/fedwarden/fedwarden/internal/rollout"
	"github.com/fedwarden/fedwarden/internal/streams"
)

const long = `Rollout follows and steers how the revisions of a federated resource's template
and overrides reach its member clusters, as kubectl rollout does for a
Deployment's Pods: under spec.rollout.strategy Waves, wave by wave, each wave
waiting until its clusters are Healthy at the new revision.

KIND is the federated kind as kubectl takes it: FederatedDeployment,
federateddeployments, fdeploy, or the kind it federates (deployment). -n
defaults to the namespace of the host's context; it is ignored for
cluster-scoped federated kinds, whose revisions and ClusterPropagatedVersion
live in the control-plane namespace (--control-plane-namespace).

Exit codes: 0 done, 1 error (and, for status, a halted rollout or a timeout),
2 bad flags or arguments, or a kind that is not federated.`

// options are the flags every subcommand has, and its argument.
type options struct {
	ref            kindref.Ref
	namespace      string
	controlPlane   string
	host           kubeconfig.Source
	requestTimeout time.Duration
}

// NewCommand returns `fedwarden rollout` with its subcommands.
func NewCommand(s streams.IO) *cobra.Command {
	cmd := cmdline.Setup(&cobra.Command{
		Use:   "rollout",
		Short: "Follow, pause, resume, undo and list the rollouts of a federated resource",
		Long:  long,
		// Any argument is checked by RunE: one that names no subcommand
		// is a usage error.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return streams.UsageError(fmt.Errorf("rollout has no subcommand %q: use status, pause, resume, undo or history", args[0]))
		},
	})
	cmd.AddCommand(newStatusCommand(s), newPauseCommand(s), newResumeCommand(s), newUndoCommand(s), newHistoryCommand(s))
	return cmd
}

// subcommand sets up a subcommand that takes KIND/NAME and the common
// flags; run gets them checked.
func subcommand(cmd *cobra.Command, o *options, run func(ctx context.Context) error) *cobra.Command {
	cmdline.Setup(cmd)
	cmd.Args = cmdline.ExactArgs(1, "the federated resource, as KIND/NAME")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ref, err := kindref.ParseRef(args[0])
		if err != nil {
			return streams.UsageError(err)
		}
		o.ref = ref
		if err := o.validate(); err != nil {
			return streams.UsageError(err)
		}
		return run(cmd.Context())
	}
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the federated resource (default the context's namespace, else default)")
	f.StringVar(&o.controlPlane, "control-plane-namespace", corev1beta1.DefaultFederationNamespace,
		"control-plane namespace of the host: the revisions and ClusterPropagatedVersions of cluster-scoped federated resources")
	f.DurationVar(&o.requestTimeout, "request-timeout", 30*time.Second, "how long any one request to the host may take")
	return cmd
}

// validate checks the common flags.
func (o *options) validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(o.controlPlane); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--control-plane-namespace: %q is not a namespace name: %s", o.controlPlane, strings.Join(msgs, "; ")))
	}
	errs = append(errs, cmdline.PositiveDuration("--request-timeout", o.requestTimeout))
	return errors.Join(errs...)
}

// target is the federated resource a command acts on, read from the host.
type target struct {
	c    client.Client
	kind kindref.Kind
	// fed is the federated resource as read.
	fed *unstructured.Unstructured
	// namespace holds its revisions and CPV.
	namespace string
	// arg and flagNS are how the user named it, for hints.
	arg, flagNS string
}

// connect loads the host, resolves the kind and reads the resource.
func (o *options) connect(ctx context.Context) (*target, error) {
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return nil, streams.UsageError(err)
	}
	namespace, err := kubeconfig.Namespace(o.namespace, o.host)
	if err != nil {
		return nil, streams.UsageError(err)
	}
	c, disco, err := host.Clients(o.requestTimeout)
	if err != nil {
		return nil, err
	}
	resolver, err := kindref.NewResolver(ctx, c, disco)
	if err != nil {
		return nil, err
	}
	kind, err := resolver.Resolve(o.ref.Kind)
	if errors.Is(err, kindref.ErrUnknownKind) {
		return nil, streams.UsageError(err)
	}
	if err != nil {
		return nil, err
	}
	key := kind.Key(o.ref.Name, namespace)
	t := &target{c: c, kind: kind, namespace: key.Namespace, arg: o.ref.Kind + "/" + o.ref.Name}
	if key.Namespace == "" {
		t.namespace = o.controlPlane
	} else {
		t.flagNS = key.Namespace
	}
	if err := t.reload(ctx, key); err != nil {
		return nil, err
	}
	return t, nil
}

// reload reads the federated resource at key again.
func (t *target) reload(ctx context.Context, key client.ObjectKey) error {
	fed, err := t.kind.Get(ctx, t.c, key)
	if err != nil {
		return err
	}
	t.fed = fed
	return nil
}

// key is the federated resource's key.
func (t *target) key() client.ObjectKey { return client.ObjectKeyFromObject(t.fed) }

// describe names the resource in messages: FederatedDeployment shop/web.
func (t *target) describe() string {
	return t.kind.Type.Federated.Kind + " " + cache.NewObjectName(t.fed.GetNamespace(), t.fed.GetName()).String()
}

// command is a fedwarden rollout command line for the resource, as a hint:
// fedwarden rollout resume fdeploy/web -n shop.
func (t *target) command(sub string) string {
	cmd := "fedwarden rollout " + sub + " " + t.arg
	if t.flagNS != "" {
		cmd += " -n " + t.flagNS
	}
	return cmd
}

// cpv reads the resource's ClusterPropagatedVersion; nil when there is
// none yet.
func (t *target) cpv(ctx context.Context) (*typesv1beta1.ClusterPropagatedVersion, error) {
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	key := propagation.CPVKey(t.kind.Type, t.fed, t.namespace)
	err := t.c.Get(ctx, key, cpv)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ClusterPropagatedVersion %s: %w", cache.ObjectName(key), err)
	}
	return cpv, nil
}

// revisions lists the resource's revisions, oldest first.
func (t *target) revisions(ctx context.Context) ([]engine.Revision, error) {
	store := engine.Store{Reader: t.c}
	return store.List(ctx, t.fed, t.namespace)
}
