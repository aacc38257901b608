package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/streams"
)

const pauseLong = `Pause stops the rollout of a federated resource where it is: it sets
spec.rollout.paused, and no cluster gets a new target revision until
'fedwarden rollout resume'. Clusters keep being synced to the revision they
target; a revision written meanwhile waits too.`

const pauseExample = `  # Stop the rollout of the FederatedDeployment web of namespace shop
  fedwarden rollout pause federateddeployment/web -n shop`

func newPauseCommand(s streams.IO) *cobra.Command {
	o := &options{}
	return subcommand(&cobra.Command{
		Use:     "pause KIND/NAME",
		Short:   "Stop the rollout of a federated resource where it is",
		Long:    pauseLong,
		Example: pauseExample,
	}, o, func(ctx context.Context) error {
		return runPause(ctx, s.Out, o)
	})
}

func runPause(ctx context.Context, out io.Writer, o *options) error {
	t, err := o.connect(ctx)
	if err != nil {
		return err
	}
	snap, err := newSnapshot(t.describe(), "", t.fed, nil)
	if err != nil {
		return err
	}
	name := t.kind.Describe(t.fed.GetName())
	if snap.spec != nil && snap.spec.Paused {
		_, err = fmt.Fprintf(out, "%s already paused\n", name)
		return err
	}
	paused := true
	if err := t.mergePatch(ctx, rolloutPatch(&paused, "", "")); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s paused\n", name)
	return err
}

// rolloutPatch is the merge patch that sets spec.rollout.paused when
// paused is not nil, and the annotation that approves a wave when approve
// is set, guarded by resourceVersion when it is set.
func rolloutPatch(paused *bool, approve, resourceVersion string) map[string]any {
	patch := map[string]any{}
	if paused != nil {
		patch["spec"] = map[string]any{"rollout": map[string]any{"paused": *paused}}
	}
	meta := map[string]any{}
	if approve != "" {
		meta["annotations"] = map[string]any{approveAnnotation: approve}
	}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	if len(meta) > 0 {
		patch["metadata"] = meta
	}
	return patch
}

// mergePatch applies patch to the resource as a JSON merge patch.
func (t *target) mergePatch(ctx context.Context, patch map[string]any) error {
	raw, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	obj := t.fed.DeepCopy()
	if err := t.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, raw)); err != nil {
		return fmt.Errorf("updating %s: %w", t.describe(), err)
	}
	t.fed = obj
	return nil
}
