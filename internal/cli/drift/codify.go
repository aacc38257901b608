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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/driftaction"
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
the host. The write is refused if the resource's spec changed since it was
read (a report of the controller meanwhile is no reason).

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
	})
	cmdline.OneParsed(cmd, "the federated resource, as KIND/NAME", kindref.ParseRef, &o.ref, func(ctx context.Context) error {
		return runCodify(ctx, s, o)
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
	c, disco, namespace, err := connect(o.host, o.namespace, o.timeout)
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
	members := memberdiff.NewMembers(o.members.ControlPlane, o.members.Networks, "fedwarden-drift-codify")
	cd, err := driftaction.Codify(ctx, memberdiff.Options{Members: members, Host: c, Timeout: o.timeout}, r, o.cluster, o.paths)
	if err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	if err := cd.Write(ctx, c, r, o.dryRun); err != nil {
		return fmt.Errorf("%s: %w", describe, err)
	}
	overrides, changes := cd.Overrides, cd.Changes
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

// printChanges prints what each codified path becomes, a Secret's values
// as markers of their length.
func printChanges(s streams.IO, changes []driftaction.Change, cluster string, secret bool) {
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
