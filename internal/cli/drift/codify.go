package drift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// codifyOptions are the flags and argument of drift codify.
type codifyOptions struct {
	ref       kindref.Ref
	namespace string
	cluster   string
	paths     []string
	dryRun    bool
	output    string
	members   memberdiff.Flags
	host      kubeconfig.Source
	timeout   time.Duration
}

const codifyLong = `Codify makes a member's out-of-band edit the desired state: it reads the
member's live values at the paths its ClusterPropagatedVersion entry says
drifted, and writes them to the federated resource as overrides of that
cluster. The controller then applies them, which writes nothing new to the
member: its copy keeps its values, and its entry becomes InSync. The other
clusters are untouched.

--path limits it to some of the drifted paths (as 'fedwarden drift' lists
them); without it every drifted path is codified. An override the cluster
has already at a path is replaced; the others are kept. A field the member
removed becomes a remove override. Admission checks the overrides: a path
that cannot be an override (the object's identity, the metadata its API
server sets, status) is refused, naming the path, and nothing is written.

Codify reads the member with the credentials the host keeps for it, as
'fedwarden diff' does, and writes the federated resource with your own
identity in the host: you need get on the cluster's credential Secret and
patch on the federated resource. A Pull cluster's copy cannot be read from
the host. The write is refused if the resource changed since it was read.

--dry-run asks the host's admission and prints what would be written, and
writes nothing. A Secret's values are never printed. -o yaml or -o json
prints the cluster's overrides as written.

Exit codes: 0 codified (or would be, with --dry-run), 1 error (nothing
drifted, a refused path, a conflict), 2 bad flags or arguments.`

const codifyExample = `  # Keep the replicas someone scaled web to in cluster2
  fedwarden drift codify fdeploy/web -n shop --cluster cluster2 --path /spec/replicas

  # What every drifted path of cluster2 would become, without writing
  fedwarden drift codify fdeploy/web -n shop --cluster cluster2 --dry-run -o yaml`

// newCodifyCommand returns `fedwarden drift codify`.
func newCodifyCommand(s streams.IO) *cobra.Command {
	o := &codifyOptions{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "codify KIND/NAME --cluster CLUSTER [--path PATH]...",
		Short:   "Make a member's drifted values the cluster's overrides",
		Long:    codifyLong,
		Example: codifyExample,
		Args:    cmdline.ExactArgs(1, "the federated resource, as KIND/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := kindref.ParseRef(args[0])
			if err != nil {
				return streams.UsageError(err)
			}
			o.ref = ref
			return runCodify(cmd.Context(), s, o)
		},
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the federated resource (default the context's namespace, else default)")
	f.StringVar(&o.cluster, "cluster", "", "the cluster whose drifted values become its overrides (required)")
	f.StringArrayVar(&o.paths, "path", nil, "a drifted path to codify, as a JSON pointer such as /spec/replicas; repeat it for several (default every drifted path)")
	f.BoolVar(&o.dryRun, "dry-run", false, "ask the host's admission, print, and write nothing")
	f.StringVarP(&o.output, "output", "o", "", "output format: empty for a summary, yaml or json (the cluster's overrides)")
	o.members.Add(f)
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long any one request to the host or the member may take")
	return cmd
}

// validate checks the flags that need no cluster.
func (o *codifyOptions) validate() error {
	var errs []error
	if o.cluster == "" {
		errs = append(errs, errors.New("--cluster is required: the cluster whose drifted values become its overrides"))
	} else {
		errs = append(errs, memberdiff.ClusterName("--cluster", o.cluster))
	}
	for _, p := range o.paths {
		if !strings.HasPrefix(p, "/") || len(p) < 2 {
			errs = append(errs, fmt.Errorf("--path %q is not a JSON pointer such as /spec/replicas", p))
		}
	}
	if o.output != "" && o.output != formatYAML && o.output != formatJSON {
		errs = append(errs, fmt.Errorf("--output %q: want yaml or json, or nothing for a summary", o.output))
	}
	errs = append(errs, o.members.Validate()...)
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout))
	return errors.Join(errs...)
}

func runCodify(ctx context.Context, s streams.IO, o *codifyOptions) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	namespace, err := kubeconfig.Namespace(o.namespace, o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	c, disco, err := host.Clients(o.timeout)
	if err != nil {
		return err
	}
	kind, r, err := memberdiff.Find(ctx, c, disco, o.ref, namespace, o.members.ControlPlane)
	if err != nil {
		if errors.Is(err, kindref.ErrUnknownKind) {
			return streams.UsageError(err)
		}
		return err
	}
	describe := kind.Type.Federated.Kind + " " + cache.NewObjectName(r.Fed.GetNamespace(), r.Fed.GetName()).String()
	pc, paths, err := drifted(r.CPV, o.cluster, o.paths)
	if err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	members := memberdiff.NewMembers(o.members.ControlPlane, o.members.Networks, "fedwarden-drift-codify")
	desired, live, err := memberdiff.Live(ctx, memberdiff.Options{Members: members, Host: c, Timeout: o.timeout}, r, pc)
	if err != nil {
		return fmt.Errorf("%s in cluster %s: %w", describe, o.cluster, err)
	}
	if live == nil {
		return fmt.Errorf("%s has no copy in cluster %s now: there is nothing to codify", describe, o.cluster)
	}
	spec, err := render.ParseSpec(r.Fed)
	if err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	overrides, changes, err := codified(spec.Overrides, o.cluster, desired.Object, live.Object, paths)
	if err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	if err := writeSpec(ctx, c, r.Fed, overrides, o.dryRun, "overrides"); err != nil {
		return fmt.Errorf("%s: %w", describe, refusedPaths(err, overrides, o.cluster))
	}
	secret := scrub.IsSecret(kind.Type.Target)
	if o.output != "" {
		return printOverrides(s, o.output, overrides, o.cluster, r.Fed, secret)
	}
	printChanges(s, changes, o.cluster, secret)
	if o.dryRun {
		_, err = fmt.Fprintf(s.ErrOut, "Dry run: the host's admission accepts %s for cluster %s of %s; nothing was written.\n", overridesCount(len(changes)), o.cluster, describe)
		return err
	}
	_, err = fmt.Fprintf(s.ErrOut, "Wrote %s for cluster %s to %s: the controller applies them, and the copy in %s keeps its values.\n",
		overridesCount(len(changes)), o.cluster, describe, o.cluster)
	return err
}

// drifted returns the cluster's placement in cpv and the paths to codify:
// the drifted paths of its entry, or those of want, each of which must be
// one of them.
func drifted(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string, want []string) (typesv1beta1.PlacedCluster, []string, error) {
	i := slices.IndexFunc(cpv.Spec.Clusters, func(pc typesv1beta1.PlacedCluster) bool { return string(pc.Name) == cluster })
	if i < 0 {
		return typesv1beta1.PlacedCluster{}, nil, fmt.Errorf("it is not placed on cluster %s", cluster)
	}
	j := slices.IndexFunc(cpv.Status.ClusterVersions, func(cv typesv1beta1.ClusterVersion) bool { return string(cv.ClusterName) == cluster })
	if j < 0 {
		return typesv1beta1.PlacedCluster{}, nil, fmt.Errorf("its ClusterPropagatedVersion has no entry for cluster %s yet", cluster)
	}
	cv := cpv.Status.ClusterVersions[j]
	if cv.State != typesv1beta1.ModifiedOutOfBand || len(cv.ChangedPaths) == 0 {
		return typesv1beta1.PlacedCluster{}, nil, fmt.Errorf("its copy in cluster %s is %s, with no field changed out of band: there is nothing to codify", cluster, cv.State)
	}
	if len(want) == 0 {
		return cpv.Spec.Clusters[i], cv.ChangedPaths, nil
	}
	for _, p := range want {
		if !slices.Contains(cv.ChangedPaths, p) {
			return typesv1beta1.PlacedCluster{}, nil, fmt.Errorf("--path %s did not drift in cluster %s; the drifted paths are %s", p, cluster, strings.Join(cv.ChangedPaths, ", "))
		}
	}
	return cpv.Spec.Clusters[i], want, nil
}

// change is one codified path: the member's value (none when it removed
// the field) and what the resource wanted there.
type change struct {
	Path    string
	Op      typesv1beta1.OverrideOp
	Value   any
	Desired any
	// hadDesired: the rendered copy has the path.
	hadDesired bool
}

// codified returns overrides with cluster's entry made to give each of
// paths the value live has there, and the changes that makes. An override
// the entry has already at a path is replaced in place; the others are
// kept, in their order, and new ones come last. A path live lacks and
// desired has becomes a remove; one both lack is an error.
func codified(overrides []typesv1beta1.ClusterOverride, cluster string, desired, live map[string]any, paths []string) ([]typesv1beta1.ClusterOverride, []change, error) {
	out := make([]typesv1beta1.ClusterOverride, len(overrides))
	for i, co := range overrides {
		out[i] = *co.DeepCopy()
	}
	i := slices.IndexFunc(out, func(co typesv1beta1.ClusterOverride) bool { return string(co.ClusterName) == cluster })
	if i < 0 {
		out = append(out, typesv1beta1.ClusterOverride{ClusterName: typesv1beta1.ClusterName(cluster)})
		i = len(out) - 1
	}
	var changes []change
	for _, p := range paths {
		c, err := changeAt(desired, live, p)
		if err != nil {
			return nil, nil, err
		}
		o := typesv1beta1.Override{Op: c.Op, Path: p}
		if c.Op != typesv1beta1.OverrideRemove {
			raw, err := json.Marshal(c.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("encoding the value at %s: %w", p, err)
			}
			o.Value = &apiextensionsv1.JSON{Raw: raw}
		}
		list := out[i].ClusterOverrides
		if k := slices.IndexFunc(list, func(e typesv1beta1.Override) bool { return e.Path == p }); k >= 0 {
			list[k] = o
		} else {
			out[i].ClusterOverrides = append(list, o)
		}
		changes = append(changes, c)
	}
	return out, changes, nil
}

// changeAt is the override that gives path the value live has there:
// replace when desired has the path, add when it does not, remove when
// live lacks it.
func changeAt(desired, live map[string]any, path string) (change, error) {
	want, inDesired := valueAt(desired, path)
	got, inLive := valueAt(live, path)
	c := change{Path: path, Value: got, Desired: want, hadDesired: inDesired}
	switch {
	case inLive && inDesired:
		c.Op = typesv1beta1.OverrideReplace
	case inLive:
		c.Op = typesv1beta1.OverrideAdd
	case inDesired:
		c.Op = typesv1beta1.OverrideRemove
	default:
		return change{}, fmt.Errorf("neither the member's copy nor the desired one has %s now: there is nothing to codify there", path)
	}
	return c, nil
}

// valueAt returns the value at a JSON pointer (RFC 6901) in obj.
func valueAt(obj map[string]any, pointer string) (any, bool) {
	var cur any = obj
	for _, token := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[token]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			var i int
			if _, err := fmt.Sscanf(token, "%d", &i); err != nil || fmt.Sprint(i) != token || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// writeSpec writes value (encoded as JSON) at the field of fed's spec
// that fields name, with the caller's identity; the write fails if fed
// changed since it was read, so that nothing written meanwhile is lost.
func writeSpec(ctx context.Context, c client.Client, fed *unstructured.Unstructured, value any, dryRun bool, fields ...string) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encoding spec.%s: %w", strings.Join(fields, "."), err)
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return fmt.Errorf("encoding spec.%s: %w", strings.Join(fields, "."), err)
	}
	obj := fed.DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, decoded, append([]string{"spec"}, fields...)...); err != nil {
		return fmt.Errorf("setting spec.%s: %w", strings.Join(fields, "."), err)
	}
	var opts []client.PatchOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	err = c.Patch(ctx, obj, client.MergeFromWithOptions(fed, client.MergeFromWithOptimisticLock{}), opts...)
	if apierrors.IsConflict(err) {
		return errors.New("it changed since it was read: nothing was written; run the command again")
	}
	return err
}

// refusedPaths names, in an admission refusal of overrides, the path each
// refused override of cluster has; other errors are returned as they are.
func refusedPaths(err error, overrides []typesv1beta1.ClusterOverride, cluster string) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return err
	}
	var refused []string
	for _, cause := range status.Status().Details.Causes {
		var i, j int
		if _, serr := fmt.Sscanf(cause.Field, "spec.overrides[%d].clusterOverrides[%d]", &i, &j); serr != nil ||
			i >= len(overrides) || j >= len(overrides[i].ClusterOverrides) || string(overrides[i].ClusterName) != cluster {
			continue
		}
		refused = append(refused, fmt.Sprintf("%s cannot be an override: %s", overrides[i].ClusterOverrides[j].Path, cause.Message))
	}
	if len(refused) == 0 {
		return err
	}
	return fmt.Errorf("the host refused the overrides, and nothing was written: %s", strings.Join(refused, "; "))
}

// printChanges prints what each codified path becomes, a Secret's values
// as markers of their length.
func printChanges(s streams.IO, changes []change, cluster string, secret bool) {
	for _, c := range changes {
		switch c.Op {
		case typesv1beta1.OverrideRemove:
			fmt.Fprintf(s.Out, "%s %s: removed, as in the member (the resource sets %s)\n", cluster, c.Path, shown(c.Desired, secret))
		case typesv1beta1.OverrideAdd:
			fmt.Fprintf(s.Out, "%s %s: %s, as in the member (the resource does not set it)\n", cluster, c.Path, shown(c.Value, secret))
		default:
			fmt.Fprintf(s.Out, "%s %s: %s, as in the member (the resource sets %s)\n", cluster, c.Path, shown(c.Value, secret), shown(c.Desired, secret))
		}
	}
}

// shown is v as JSON, or for a Secret a marker of its length.
func shown(v any, secret bool) string {
	raw, _ := json.Marshal(v)
	if secret {
		return fmt.Sprintf("<redacted: %d bytes>", len(raw))
	}
	return string(raw)
}

// printOverrides prints cluster's entry of overrides as YAML or JSON; a
// Secret's values redacted as 'fedwarden diff' redacts them.
func printOverrides(s streams.IO, format string, overrides []typesv1beta1.ClusterOverride, cluster string, fed *unstructured.Unstructured, secret bool) error {
	i := slices.IndexFunc(overrides, func(co typesv1beta1.ClusterOverride) bool { return string(co.ClusterName) == cluster })
	raw, err := json.Marshal(overrides[i])
	if err != nil {
		return err
	}
	var entry map[string]any
	if err := json.Unmarshal(raw, &entry); err != nil {
		return err
	}
	if secret {
		scrub.RedactRevision(render.Template(fed), []any{entry})
	}
	if format == formatJSON {
		raw, err = json.MarshalIndent(entry, "", "  ")
		raw = append(raw, '\n')
	} else {
		raw, err = yaml.Marshal(entry)
	}
	if err != nil {
		return err
	}
	_, err = s.Out.Write(raw)
	return err
}

// overridesCount says "1 override", "2 overrides".
func overridesCount(n int) string {
	if n == 1 {
		return "1 override"
	}
	return fmt.Sprintf("%d overrides", n)
}
