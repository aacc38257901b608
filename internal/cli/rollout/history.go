package rollout

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	engine "github.com/fedwarden/fedwarden/internal/rollout"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// historyOptions are the flags of history.
type historyOptions struct {
	options
	revision int64
}

const historyLong = `History lists the revisions the control plane keeps of a federated resource's
template and overrides (ControllerRevisions, spec.rollout.revisionHistoryLimit
of them), oldest first: each one's number, the template and override versions
its content was given, how many of the placed clusters target it now (from the
ClusterPropagatedVersion) and its change cause (the annotation
kubernetes.io/change-cause the resource had).

--revision N prints revision N's template and overrides as YAML. A Secret's
values are never printed: for a kind whose target is the core Secret, each
value of data and stringData, in the template and in the overrides, is shown
as <redacted: N bytes>, and so are the annotation
kubectl.kubernetes.io/last-applied-configuration and any annotation that holds
one of the values.`

const historyExample = `  # The revisions of the FederatedDeployment web of namespace shop
  fedwarden rollout history federateddeployment/web -n shop

  # What revision 2 held
  fedwarden rollout history deployment/web -n shop --revision 2`

func newHistoryCommand(s streams.IO) *cobra.Command {
	o := &historyOptions{}
	cmd := subcommand(&cobra.Command{
		Use:     "history KIND/NAME",
		Short:   "List the revisions of a federated resource, or show one",
		Long:    historyLong,
		Example: historyExample,
	}, &o.options, func(ctx context.Context) error {
		if o.revision < 0 {
			return streams.UsageError(fmt.Errorf("--revision %d must not be negative", o.revision))
		}
		return runHistory(ctx, s, o)
	})
	cmd.Flags().Int64Var(&o.revision, "revision", 0, "print this revision's template and overrides as YAML")
	return cmd
}

func runHistory(ctx context.Context, s streams.IO, o *historyOptions) error {
	t, err := o.connect(ctx)
	if err != nil {
		return err
	}
	revs, err := t.revisions(ctx)
	if err != nil {
		return err
	}
	if o.revision > 0 {
		r, ok := engine.ByNumber(revs, typesv1beta1.Revision(o.revision))
		if !ok {
			return fmt.Errorf("%s has no revision %d (its revisions: %s)", t.describe(), o.revision, orDefault(numbers(revs), "none yet"))
		}
		return printRevision(s.Out, t.kind.Describe(t.fed.GetName()), r, scrub.IsSecret(t.kind.Type.Target))
	}
	if len(revs) == 0 {
		_, err = fmt.Fprintf(s.ErrOut, "%s has no revisions yet.\n", t.describe())
		return err
	}
	cpv, err := t.cpv(ctx)
	if err != nil {
		return err
	}
	if scrub.IsSecret(t.kind.Type.Target) {
		for i := range revs {
			revs[i].ChangeCause = scrub.RedactCause(revs[i].ChangeCause, revs[i].Template, revs[i].Overrides)
		}
	}
	return printHistory(s.Out, revs, targets(revs, cpv))
}

// targets counts the placed clusters that target each revision: by their
// CPV entry's targetRevision; a cluster with none (strategy All, or no
// entry yet) targets the latest.
func targets(revs []engine.Revision, cpv *typesv1beta1.ClusterPropagatedVersion) map[typesv1beta1.Revision]int {
	out := map[typesv1beta1.Revision]int{}
	if cpv == nil || len(revs) == 0 {
		return out
	}
	latest := revs[len(revs)-1].Number
	for _, pc := range cpv.Spec.Clusters {
		target := latest
		for _, cv := range cpv.Status.ClusterVersions {
			if cv.ClusterName == pc.Name && cv.TargetRevision > 0 {
				target = cv.TargetRevision
			}
		}
		out[target]++
	}
	return out
}

// printHistory writes the table of revisions.
func printHistory(w io.Writer, revs []engine.Revision, clusters map[typesv1beta1.Revision]int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tTEMPLATE\tOVERRIDE\tCLUSTERS\tCHANGE-CAUSE")
	for _, r := range revs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", r.Number, orDefault(string(r.Versions.Template), none), orDefault(string(r.Versions.Override), none),
			clusters[r.Number], orDefault(oneLine(r.ChangeCause), "<none>"))
	}
	return tw.Flush()
}

// oneLine keeps a change cause on its row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// printRevision writes revision r of the resource called name as YAML,
// with a Secret's values redacted when secret is set.
func printRevision(w io.Writer, name string, r engine.Revision, secret bool) error {
	template := runtime.DeepCopyJSON(r.Template)
	var overrides []any
	if r.Overrides != nil {
		overrides = runtime.DeepCopyJSONValue(r.Overrides).([]any)
	}
	cause := r.ChangeCause
	if secret {
		cause = scrub.RedactCause(cause, r.Template, r.Overrides)
		scrub.RedactRevision(template, overrides)
	}
	// The template first, then the overrides, which apply to it.
	data, err := yaml.Marshal(map[string]any{"template": template})
	if err != nil {
		return fmt.Errorf("encoding revision %d: %w", r.Number, err)
	}
	if len(overrides) > 0 {
		more, err := yaml.Marshal(map[string]any{"overrides": overrides})
		if err != nil {
			return fmt.Errorf("encoding revision %d: %w", r.Number, err)
		}
		data = append(data, more...)
	}
	header := fmt.Sprintf("# %s, revision %d: template version %s, override version %s",
		name, r.Number, orDefault(string(r.Versions.Template), none), orDefault(string(r.Versions.Override), none))
	if cause != "" {
		header += ", change cause " + strconv.Quote(oneLine(cause))
	}
	if secret {
		header += "\n# The Secret's values are redacted."
	}
	_, err = fmt.Fprintf(w, "%s\n%s", header, data)
	return err
}
