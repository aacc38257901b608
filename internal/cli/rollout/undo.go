package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	engine "github.com/fedwarden/fedwarden/internal/rollout"
	"github.com/fedwarden/fedwarden/internal/specwrite"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// undoOptions are the flags of undo.
type undoOptions struct {
	options
	toRevision int64
	allAtOnce  bool
}

const undoLong = `Undo rolls a federated resource back to an earlier revision: it writes that
revision's template and overrides back into spec.template and spec.overrides,
and the control plane rolls them out as a new latest revision, through the
same waves as any change (under strategy All, to every cluster at once). The
earlier revision is renumbered as the new one, as a Deployment's are.

--to-revision picks the revision (see 'fedwarden rollout history'); by default
it is the one before the latest. --all-at-once makes the new revision skip the
waves: every cluster gets it at once (the annotation
fedwarden.io/rollout-all-at-once names it).

The write is a JSON patch guarded by the resource's resourceVersion: if the
resource changed since undo read it, nothing is written and undo fails; run it
again. Undo refuses, too, while the control plane has not recorded the
resource's current template and overrides as a revision yet. Undoing to the
latest revision writes nothing ("already at revision N").`

const undoExample = `  # Roll the FederatedDeployment web of namespace shop back to its previous revision
  fedwarden rollout undo federateddeployment/web -n shop

  # Back to revision 3, to every cluster at once
  fedwarden rollout undo deployment/web -n shop --to-revision 3 --all-at-once`

func newUndoCommand(s streams.IO) *cobra.Command {
	o := &undoOptions{}
	cmd := subcommand(&cobra.Command{
		Use:     "undo KIND/NAME",
		Short:   "Roll a federated resource back to an earlier revision",
		Long:    undoLong,
		Example: undoExample,
	}, &o.options, func(ctx context.Context) error {
		if o.toRevision < 0 {
			return streams.UsageError(fmt.Errorf("--to-revision %d must not be negative", o.toRevision))
		}
		return runUndo(ctx, s.Out, o)
	})
	f := cmd.Flags()
	f.Int64Var(&o.toRevision, "to-revision", 0, "the revision to roll back to; 0 means the one before the latest")
	f.BoolVar(&o.allAtOnce, "all-at-once", false, "give the new revision to every cluster at once, skipping the waves")
	return cmd
}

// undoPlan is what undo writes.
type undoPlan struct {
	// from is the revision whose content is written back.
	from engine.Revision
	// next is the number the control plane gives the new revision.
	next typesv1beta1.Revision
	// already: from is the latest revision; nothing is written.
	already bool
}

// planUndo picks, among revs (oldest first), the revision to roll back to:
// number to, or the one before the latest when to is 0. current is the key
// of the resource's content now: a content that is not the latest
// revision's yet would be numbered before the undo's.
func planUndo(name string, revs []engine.Revision, to typesv1beta1.Revision, current engine.Key) (undoPlan, error) {
	if len(revs) == 0 {
		return undoPlan{}, fmt.Errorf("%s has no revisions yet: the control plane records one for each template and overrides it rolls out (is `fedwarden controller-manager` running?)", name)
	}
	latest := revs[len(revs)-1]
	if latest.Key != (engine.Key{}) && latest.Key != current {
		return undoPlan{}, fmt.Errorf("%s: its template or overrides changed since revision %d, and the control plane has not recorded them as a revision yet: wait until `fedwarden rollout history` lists it, then undo again", name, latest.Number)
	}
	plan := undoPlan{next: latest.Number + 1}
	switch {
	case to == 0 && len(revs) == 1:
		return undoPlan{}, fmt.Errorf("%s has only revision %d: there is no earlier revision to roll back to", name, latest.Number)
	case to == 0:
		plan.from = revs[len(revs)-2]
	default:
		r, ok := engine.ByNumber(revs, to)
		if !ok {
			return undoPlan{}, fmt.Errorf("%s has no revision %d (its revisions: %s)", name, to, numbers(revs))
		}
		plan.from, plan.already = r, r.Number == latest.Number
	}
	return plan, nil
}

// numbers lists the numbers of revs: "1, 2, 3".
func numbers(revs []engine.Revision) string {
	out := make([]string, 0, len(revs))
	for _, r := range revs {
		out = append(out, strconv.FormatInt(int64(r.Number), 10))
	}
	return strings.Join(out, ", ")
}

func runUndo(ctx context.Context, out io.Writer, o *undoOptions) error {
	t, err := o.connect(ctx)
	if err != nil {
		return err
	}
	revs, err := t.revisions(ctx)
	if err != nil {
		return err
	}
	name := t.kind.Describe(t.fed.GetName())
	plan, err := planUndo(t.describe(), revs, typesv1beta1.Revision(o.toRevision), engine.KeyOf(t.fed))
	if err != nil {
		return err
	}
	if plan.already {
		_, err = fmt.Fprintf(out, "%s already at revision %d: nothing to undo\n", name, plan.from.Number)
		return err
	}
	if err := t.undo(ctx, plan, o.allAtOnce); err != nil {
		return err
	}
	how := ""
	if o.allAtOnce {
		how = ", to every cluster at once"
	}
	_, err = fmt.Fprintf(out, "%s rolled back to revision %d's content as revision %d%s\n", name, plan.from.Number, plan.next, how)
	return err
}

// undo writes the content of plan.from back into the resource, as read.
func (t *target) undo(ctx context.Context, plan undoPlan, allAtOnce bool) error {
	c, err := t.content(ctx, plan.from)
	if err != nil {
		return err
	}
	var annotation string
	if allAtOnce {
		annotation = strconv.FormatInt(int64(plan.next), 10)
	}
	var written *unstructured.Unstructured
	err = specwrite.Write(ctx, t.c, t.fed, func(base *unstructured.Unstructured) error {
		patch, err := undoPatch(base, c, annotation)
		if err != nil {
			return err
		}
		obj := base.DeepCopy()
		if err := t.c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			return err
		}
		written = obj
		return nil
	})
	var changed *specwrite.ChangedError
	switch {
	case err == nil:
		t.fed = written
		return nil
	case errors.As(err, &changed):
		return fmt.Errorf("%s changed since it was read (resourceVersion %s, now %s), so nothing was written: run undo again", t.describe(), changed.Read, changed.Now)
	}
	return fmt.Errorf("writing revision %d's content into %s: %w", plan.from.Number, t.describe(), err)
}

// rawContent is a revision's data, as stored, to be written back as it
// is (decoded, a large integer would lose precision).
type rawContent struct {
	Template  json.RawMessage `json:"template"`
	Overrides json.RawMessage `json:"overrides,omitempty"`
}

// content reads r's ControllerRevision again for its data as stored.
func (t *target) content(ctx context.Context, r engine.Revision) (rawContent, error) {
	cr := &appsv1.ControllerRevision{}
	if err := t.c.Get(ctx, client.ObjectKey{Namespace: t.namespace, Name: r.Name}, cr); err != nil {
		return rawContent{}, fmt.Errorf("reading revision %d (ControllerRevision %s): %w", r.Number, cache.NewObjectName(t.namespace, r.Name).String(), err)
	}
	var c rawContent
	if err := json.Unmarshal(cr.Data.Raw, &c); err != nil {
		return rawContent{}, fmt.Errorf("reading revision %d (ControllerRevision %s): %w", r.Number, cache.NewObjectName(t.namespace, r.Name).String(), err)
	}
	return c, nil
}

// undoPatch is the JSON patch that writes c into fed's spec.template and
// spec.overrides and, when allAtOnce is set, sets the all-at-once
// annotation to it; its first operation tests fed's resourceVersion, so
// that it applies only to fed as read. A merge patch would merge the
// revision's maps into the current ones instead of replacing them.
func undoPatch(fed *unstructured.Unstructured, c rawContent, allAtOnce string) ([]byte, error) {
	ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": fed.GetResourceVersion()}}
	template := c.Template
	if isNull(template) {
		template = json.RawMessage("{}")
	}
	spec, hasSpec := fed.Object["spec"].(map[string]any)
	switch {
	case !hasSpec:
		value := map[string]any{"template": template}
		if !isNull(c.Overrides) {
			value["overrides"] = c.Overrides
		}
		ops = append(ops, map[string]any{"op": "add", "path": "/spec", "value": value})
	default:
		ops = append(ops, map[string]any{"op": addOrReplace(spec, "template"), "path": "/spec/template", "value": template})
		_, hasOverrides := spec["overrides"]
		switch {
		case !isNull(c.Overrides):
			ops = append(ops, map[string]any{"op": addOrReplace(spec, "overrides"), "path": "/spec/overrides", "value": c.Overrides})
		case hasOverrides:
			ops = append(ops, map[string]any{"op": "remove", "path": "/spec/overrides"})
		}
	}
	if allAtOnce != "" {
		if fed.GetAnnotations() == nil {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{typesv1beta1.AnnotationAllAtOnce: allAtOnce}})
		} else {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + escapePointer(typesv1beta1.AnnotationAllAtOnce), "value": allAtOnce})
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	return patch, nil
}

// addOrReplace is the JSON patch operation that sets key of m: replace
// when m has it (replace fails on a missing member), else add.
func addOrReplace(m map[string]any, key string) string {
	if _, ok := m[key]; ok {
		return "replace"
	}
	return "add"
}

// isNull tells whether raw holds no value.
func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
