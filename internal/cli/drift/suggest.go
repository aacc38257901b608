package drift

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// suggestOptions are the flags and argument of drift suggest.
type suggestOptions struct {
	ref           *kindref.Ref
	namespace     string
	allNamespaces bool
	output        string
	minEpisodes   int
	host          kubeconfig.Source
	timeout       time.Duration
}

// formatText is suggest's default output format.
const formatText = "text"

const suggestLong = `Suggest reads the drift ledgers (the ended drift episodes each
ClusterPropagatedVersion keeps, as 'fedwarden drift --history' lists them)
and proposes the driftPolicy entries that would silence what a field manager
changes again and again in a federated resource's member copies: an
autoscaler's replicas, a controller that rewrites a field, a webhook's
annotation.

A manager that changed the same path (or different fields under one parent)
in at least --min-episodes episodes, in any of the resource's clusters, is
proposed for ignoreManagers when it changed nothing else, and is not a
person's tool (kubectl, kubectl-edit, kubectl-scale, kubectl-client-side-apply
and every other kubectl-*: ignoring one would hide every hand edit). Otherwise
the paths it keeps changing are proposed for ignorePaths, so that the rest of
its writes, or of a person's edits, are still drift. What the resource's
drift policy already ignores, in the episode's cluster (retainReplicas
included), is left out. Each suggestion comes with its evidence: the
manager and its operation (Apply or Update), how many episodes, in which
clusters, first and last seen.

KIND/NAME limits it to one federated resource, which must exist; KIND is the
federated kind as kubectl takes it (FederatedDeployment, fdeploy) or the kind
it federates (deployment).

For each resource it prints a kubectl patch command that adds them, a JSON
merge patch; since a merge patch replaces a list whole, the patch's lists
hold the entries the resource's policy has already, then the new ones.
-o yaml prints one merge patch document per resource instead, the evidence
in comments (kubectl patch --type merge --patch-file FILE); -o json prints
everything. Suggest only reads the host: it writes nothing.

Exit codes: 0 done (suggestions or none), 1 error, 2 bad flags or arguments,
or a kind that is not federated.`

const suggestExample = `  # What could be ignored in the namespace of the current context
  fedwarden drift suggest

  # In every namespace, from managers seen in 5 or more episodes
  fedwarden drift suggest -A --min-episodes 5

  # For one resource, as a merge patch to review and apply
  fedwarden drift suggest fdeploy/web -n shop -o yaml > patch.yaml
  kubectl patch federateddeployment.types.kubefed.io web -n shop --type merge --patch-file patch.yaml`

// newSuggestCommand returns `fedwarden drift suggest`.
func newSuggestCommand(s streams.IO) *cobra.Command {
	o := &suggestOptions{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "suggest [-n NAMESPACE | -A] [KIND/NAME]",
		Short:   "Propose the drift policy entries that would silence what keeps drifting",
		Long:    suggestLong,
		Example: suggestExample,
		Args:    cmdline.MaxArgs(1, "the federated resource, as KIND/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				ref, err := kindref.ParseRef(args[0])
				if err != nil {
					return streams.UsageError(err)
				}
				o.ref = &ref
			}
			return runSuggest(cmd.Context(), s, o)
		},
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace to read (default the context's namespace, else default)")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "read every namespace")
	f.StringVarP(&o.output, "output", "o", formatText, "output format: text, yaml (merge patches) or json")
	f.IntVar(&o.minEpisodes, "min-episodes", 3, "how many drift episodes of the same path by the same manager make a suggestion (at least 2)")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long any one request to the host may take")
	return cmd
}

// validate checks the flags that need no cluster.
func (o *suggestOptions) validate() error {
	var errs []error
	if o.allNamespaces && o.namespace != "" {
		errs = append(errs, fmt.Errorf("give -n %s or -A, not both", o.namespace))
	}
	if o.allNamespaces && o.ref != nil {
		errs = append(errs, fmt.Errorf("give %s/%s or -A, not both", o.ref.Kind, o.ref.Name))
	}
	switch o.output {
	case formatText, formatYAML, formatJSON:
	default:
		errs = append(errs, fmt.Errorf("--output %q is not supported: use text, yaml or json", o.output))
	}
	if o.minEpisodes < 2 {
		errs = append(errs, fmt.Errorf("--min-episodes %d must be at least 2: a rule is for what drifts again and again", o.minEpisodes))
	}
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout))
	return errors.Join(errs...)
}

func runSuggest(ctx context.Context, s streams.IO, o *suggestOptions) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	namespace, err := scope(o.allNamespaces, o.namespace, o.host)
	if err != nil {
		return err
	}
	c, disco, err := host.Clients(o.timeout)
	if err != nil {
		return err
	}
	only := func(resourceRef) bool { return true }
	if o.ref != nil {
		if only, namespace, err = resolveRef(ctx, c, disco, *o.ref, namespace); err != nil {
			return err
		}
	}
	cpvs, scopes, err := list(ctx, c, namespace)
	if err != nil {
		return err
	}
	proposals, err := propose(ctx, c, byResource(episodes(cpvs, scopes), only), o.minEpisodes)
	if err != nil {
		return err
	}
	if len(proposals) == 0 && o.output != formatJSON {
		_, err := fmt.Fprintln(s.ErrOut, nothingToSuggest(o, namespace))
		return err
	}
	return printProposals(s.Out, o.output, proposals)
}

// resolveRef resolves ref's kind with the host's discovery, and checks
// that the resource exists: it returns what tells the resource's
// episodes, and the namespace whose CPVs to list (all, for a
// cluster-scoped kind, whose CPVs live in the control-plane namespace).
func resolveRef(ctx context.Context, c client.Reader, disco discovery.DiscoveryInterface, ref kindref.Ref, namespace string) (func(resourceRef) bool, string, error) {
	resolver, err := kindref.NewResolver(ctx, c, disco)
	if err != nil {
		return nil, "", err
	}
	kind, err := resolver.Resolve(ref.Kind)
	if errors.Is(err, kindref.ErrUnknownKind) {
		return nil, "", streams.UsageError(err)
	}
	if err != nil {
		return nil, "", err
	}
	key := kind.Key(ref.Name, namespace)
	if _, err := kind.Get(ctx, c, key); err != nil {
		return nil, "", err
	}
	gk := kind.Type.Federated.GroupKind()
	only := func(r resourceRef) bool {
		return r.groupKind() == gk && r.namespace == key.Namespace && r.name == key.Name
	}
	return only, key.Namespace, nil
}

// nothingToSuggest says there is nothing to suggest, and where.
func nothingToSuggest(o *suggestOptions, namespace string) string {
	where := ""
	switch {
	case o.ref != nil:
		where = fmt.Sprintf(" for %s/%s", o.ref.Kind, o.ref.Name)
	case namespace != "":
		where = " in namespace " + namespace
	}
	return fmt.Sprintf("No drift rule to suggest%s: no field manager changed a path that the drift policies do not ignore in %d or more drift episodes.", where, o.minEpisodes)
}

// resourceRef names a federated resource whose CPV has a drift ledger.
type resourceRef struct {
	apiVersion, kind, namespace, name string
}

func (r resourceRef) groupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(r.apiVersion, r.kind).GroupKind()
}

// resourceEpisodes are the ended episodes of one federated resource.
type resourceEpisodes struct {
	ref      resourceRef
	episodes []Episode
}

// byResource groups episodes by federated resource, keeping those only
// takes, sorted by namespace, kind and name.
func byResource(episodes []Episode, only func(resourceRef) bool) []resourceEpisodes {
	var out []resourceEpisodes
	for _, ep := range episodes {
		ref := resourceRef{apiVersion: cmp.Or(ep.apiVersion, typesv1beta1.GroupVersion.String()), kind: ep.Kind, namespace: ep.Namespace, name: ep.Name}
		if !only(ref) {
			continue
		}
		i := slices.IndexFunc(out, func(r resourceEpisodes) bool { return r.ref == ref })
		if i < 0 {
			out = append(out, resourceEpisodes{ref: ref})
			i = len(out) - 1
		}
		out[i].episodes = append(out[i].episodes, ep)
	}
	slices.SortFunc(out, func(a, b resourceEpisodes) int {
		return cmp.Or(cmp.Compare(a.ref.namespace, b.ref.namespace), cmp.Compare(a.ref.kind, b.ref.kind), cmp.Compare(a.ref.name, b.ref.name))
	})
	return out
}

// propose returns the proposals for resources. A resource is read from the
// host, for its drift policy, only when its ledgers suggest something
// before that policy is taken into account; one that no longer exists is
// skipped.
func propose(ctx context.Context, c client.Reader, resources []resourceEpisodes, minEpisodes int) ([]Proposal, error) {
	out := []Proposal{}
	none := func(string) drift.Policy { return drift.Policy{} }
	for _, r := range resources {
		if len(suggest(r.episodes, none, minEpisodes)) == 0 {
			continue
		}
		spec, found, err := federatedSpec(ctx, c, r.ref)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		// Suggestions weigh the ignore rules, which name clusters, not
		// the waivers, which alone select clusters by label.
		policy := func(cluster string) drift.Policy { return propagation.PolicyFor(spec, cluster, nil, "") }
		if suggestions := suggest(r.episodes, policy, minEpisodes); len(suggestions) > 0 {
			out = append(out, newProposal(r.ref, spec.DriftPolicy, suggestions))
		}
	}
	return out, nil
}

// federatedSpec reads the spec of the federated resource ref names, as
// the controller reads it; found is false when the resource, or its kind,
// is gone.
func federatedSpec(ctx context.Context, c client.Reader, ref resourceRef) (render.Spec, bool, error) {
	fed := &unstructured.Unstructured{}
	fed.SetGroupVersionKind(schema.FromAPIVersionAndKind(ref.apiVersion, ref.kind))
	key := client.ObjectKey{Namespace: ref.namespace, Name: ref.name}
	err := c.Get(ctx, key, fed)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return render.Spec{}, false, nil
	case err != nil:
		return render.Spec{}, false, fmt.Errorf("reading %s %s: %w", ref.kind, cache.ObjectName(key), err)
	}
	spec, err := render.ParseSpec(fed)
	if err != nil {
		return render.Spec{}, false, fmt.Errorf("%s %s: %w", ref.kind, cache.ObjectName(key), err)
	}
	return spec, true, nil
}
