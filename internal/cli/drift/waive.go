package drift

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/cache"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/driftaction"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// waiveOptions are the flags and argument of drift waive.
type waiveOptions struct {
	ref       kindref.Ref
	namespace string
	clusters  []string
	selector  string
	paths     []string
	lasts     time.Duration
	reason    string
	owner     string
	max       time.Duration
	dryRun    bool
	host      kubeconfig.Source
	timeout   time.Duration
	wait      time.Duration
}

const waiveLong = `Waive lets a drift stay for a while: it adds a waiver to the federated
resource's spec.driftPolicy.waivers, for the clusters --cluster names or
--selector selects by label. While it lasts, an out-of-band edit of
the waived paths in the waived clusters is kept, even under Enforce, and
the cluster's CPV entry says Waived, with the waiver's expiry; an edit of
any other path is handled as always, and a write of the copy keeps the
member's values at the waived paths. When it expires the drift policy
applies again at once: Enforce heals the edit, Alert reports it.

--for is how long it lasts, at most --max-waiver-duration (30 days, as the
controller's flag of that name: the controller honours no waiver that
expires later). --reason is required; --owner says who answers for it.
Waive writes with your own identity in the host (patch on the federated
resource), refused if the resource's spec changed since it was read (a
report of the controller meanwhile is no reason); the
resource's other waivers are kept. --dry-run asks the host's admission and
writes nothing.

A waiver holds once the controller-manager has taken the change up
(status.observedGeneration): until then an edit of the waived paths may
still be healed. Waive waits for that up to --wait (30s; 0: no wait) and
says so if it did not come; a Pull cluster's agent takes the waiver up a
moment later.

Exit codes: 0 written (or would be, with --dry-run), 1 error, 2 bad flags or
arguments.`

const waiveExample = `  # Keep the hand-set mode of cluster2's copy through a maintenance window
  fedwarden drift waive fconfigmap/valves -n plant --cluster cluster2 --path /data/mode \
    --for 4h --reason "valve maintenance" --owner ops@example.com

  # The same in every cluster labelled env=lab, as they are labelled when a copy is judged
  fedwarden drift waive fconfigmap/valves -n plant -l env=lab --path /data/mode --for 4h --reason "lab tests"`

// newWaiveCommand returns `fedwarden drift waive`.
func newWaiveCommand(s streams.IO) *cobra.Command {
	o := &waiveOptions{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "waive KIND/NAME (--cluster CLUSTER | --selector LABELS) --path PATH --for DURATION --reason REASON",
		Short:   "Let the drift of some paths in some clusters stay until a waiver expires",
		Long:    waiveLong,
		Example: waiveExample,
	})
	cmdline.OneParsed(cmd, "the federated resource, as KIND/NAME", kindref.ParseRef, &o.ref, func(ctx context.Context) error {
		return runWaive(ctx, s, o)
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the federated resource (default the context's namespace, else default)")
	f.StringArrayVar(&o.clusters, "cluster", nil, "a cluster the waiver applies in; repeat it for several (this or --selector is required)")
	f.StringVarP(&o.selector, "selector", "l", "", "the clusters the waiver applies in, by their FederatedClusters' labels, such as env=lab (instead of --cluster)")
	f.StringArrayVar(&o.paths, "path", nil, "a path waived, as a JSON pointer such as /spec/replicas, covering everything under it; repeat it for several (required)")
	f.DurationVar(&o.lasts, "for", 0, "how long the waiver lasts, such as 4h (required)")
	f.StringVar(&o.reason, "reason", "", "why the drift may stay (required, at most 256 characters)")
	f.StringVar(&o.owner, "owner", "", "who answers for the waiver, such as an e-mail address (at most 128 characters)")
	f.DurationVar(&o.max, "max-waiver-duration", drift.DefaultMaxWaiver, "the longest --for allowed, as the controller's flag of that name")
	f.BoolVar(&o.dryRun, "dry-run", false, "ask the host's admission, print, and write nothing")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long any one request to the host may take")
	f.DurationVar(&o.wait, "wait", 30*time.Second, "how long to wait for the controller-manager to take the waiver up (the resource's status.observedGeneration); 0 does not wait")
	return cmd
}

// validate checks the flags that need no cluster.
func (o *waiveOptions) validate() error {
	var errs []error
	switch {
	case len(o.clusters) == 0 && o.selector == "":
		errs = append(errs, errors.New("--cluster or --selector is required: the clusters the waiver applies in"))
	case len(o.clusters) > 0 && o.selector != "":
		errs = append(errs, errors.New("--cluster and --selector cannot both be given: a waiver names its clusters or selects them by label"))
	}
	if o.selector != "" {
		if _, err := typesv1beta1.ParseClusterSelector(o.selector); err != nil {
			errs = append(errs, fmt.Errorf("--selector %q: %w", o.selector, err))
		}
	}
	for _, c := range o.clusters {
		errs = append(errs, memberdiff.ClusterName("--cluster", c))
	}
	if len(o.paths) == 0 {
		errs = append(errs, errors.New("--path is required: the paths whose drift may stay"))
	}
	for _, p := range o.paths {
		if !strings.HasPrefix(p, "/") || len(p) < 2 || len(p) > 256 {
			errs = append(errs, fmt.Errorf("--path %q is not a JSON pointer such as /spec/replicas", p))
		}
	}
	switch {
	case o.lasts <= 0:
		errs = append(errs, errors.New("--for is required, and must be positive: how long the waiver lasts"))
	case o.lasts > o.max:
		errs = append(errs, fmt.Errorf("--for %s is longer than --max-waiver-duration %s: the controller would not honour the waiver", o.lasts, o.max))
	}
	if o.reason == "" || len(o.reason) > 256 {
		errs = append(errs, errors.New("--reason is required, at most 256 characters: why the drift may stay"))
	}
	if len(o.owner) > 128 {
		errs = append(errs, errors.New("--owner may have at most 128 characters"))
	}
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout))
	if o.wait < 0 {
		errs = append(errs, fmt.Errorf("--wait must not be negative, got %s", o.wait))
	}
	return errors.Join(errs...)
}

func runWaive(ctx context.Context, s streams.IO, o *waiveOptions) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	c, disco, namespace, err := connect(o.host, o.namespace, o.timeout)
	if err != nil {
		return err
	}
	resolver, err := kindref.NewResolver(ctx, c, disco)
	if err != nil {
		return err
	}
	kind, err := resolver.Resolve(o.ref.Kind)
	if err != nil {
		return streams.UsageError(err)
	}
	fed, err := kind.Get(ctx, c, kind.Key(o.ref.Name, namespace))
	if err != nil {
		return err
	}
	describe := kind.Type.Federated.Kind + " " + cache.NewObjectName(fed.GetNamespace(), fed.GetName()).String()
	w := o.waiver().Of(time.Now())
	if err := driftaction.Waive(ctx, c, &memberdiff.Resource{Type: kind.Type, Fed: fed}, w, o.dryRun); err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	where := strings.Join(o.clusters, ", ")
	if o.selector != "" {
		where = "the clusters labelled " + o.selector
	}
	what := fmt.Sprintf("the drift of %s in %s of %s is kept until %s",
		strings.Join(o.paths, ", "), where, describe, w.Expires.UTC().Format(time.RFC3339))
	if o.dryRun {
		_, err = fmt.Fprintf(s.ErrOut, "Dry run: the host's admission accepts the waiver (%s); nothing was written.\n", what)
		return err
	}
	if _, err := fmt.Fprintf(s.Out, "Waived: %s (%s).\n", what, w.Reason); err != nil {
		return err
	}
	if o.wait == 0 {
		return nil
	}
	if observed, generation, err := driftaction.TakenUp(ctx, c, fed, o.wait); err != nil || observed < generation {
		_, werr := fmt.Fprintf(s.ErrOut, "Note: %s.\n", driftaction.NotTakenUp(o.wait, observed, generation, err))
		return werr
	}
	return nil
}

// waiver is the waiver o asks for; o is valid.
func (o *waiveOptions) waiver() driftaction.Waiver {
	w := driftaction.Waiver{Clusters: o.clusters, Paths: o.paths, For: o.lasts, Reason: o.reason, Owner: o.owner}
	if o.selector != "" {
		w.Selector, _ = typesv1beta1.ParseClusterSelector(o.selector) // validate parsed it
	}
	return w
}
