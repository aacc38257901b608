package rollout

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// approveAnnotation approves a wave that awaits approval.
const approveAnnotation = typesv1beta1.AnnotationApproveWave

const resumeLong = `Resume lets the rollout of a federated resource go on: it unsets
spec.rollout.paused when it is set, and approves the first wave that awaits
approval (a wave with pause: true) by setting the annotation
fedwarden.io/approve-wave to "<revision>/<wave index>", both in one write,
which fails if the resource changed since it was read (resume then reads it
again and decides again). It says what it did, and "nothing to resume" when the
rollout is neither paused nor waiting for an approval.`

const resumeExample = `  # Go on with the rollout of the FederatedDeployment web of namespace shop
  fedwarden rollout resume federateddeployment/web -n shop`

func newResumeCommand(s streams.IO) *cobra.Command {
	o := &options{}
	return subcommand(&cobra.Command{
		Use:     "resume KIND/NAME",
		Short:   "Resume a paused rollout, and approve the wave that awaits approval",
		Long:    resumeLong,
		Example: resumeExample,
	}, o, func(ctx context.Context) error {
		return runResume(ctx, s.Out, o)
	})
}

// resumption is what resume does to a resource.
type resumption struct {
	// unpause: spec.rollout.paused is set.
	unpause bool
	// approve is the value of the approval annotation to write; empty for
	// none.
	approve string
	// wave names the wave approve approves, and approved one already
	// approved, for messages.
	wave, approved string
}

// planResume decides what resume does to a resource whose spec.rollout,
// status.rollout and annotations are those of snap and annotations.
func planResume(snap snapshot, annotations map[string]string) resumption {
	var p resumption
	p.unpause = snap.spec != nil && snap.spec.Paused
	r := snap.status.Rollout
	i := awaitingApproval(r)
	if i < 0 {
		return p
	}
	value := fmt.Sprintf("%d/%d", r.Revision, i)
	wave := fmt.Sprintf("wave %s (index %d) of revision %d", r.Waves[i].Name, i, r.Revision)
	if annotations[approveAnnotation] == value || (r.Approved != nil && int(*r.Approved) == i) {
		p.approved = wave
		return p
	}
	p.approve, p.wave = value, wave
	return p
}

// says tells what p did to the resource called name.
func (p resumption) says(name string) string {
	var did []string
	if p.unpause {
		did = append(did, "resumed")
	}
	if p.approve != "" {
		did = append(did, "approved "+p.wave)
	}
	switch {
	case len(did) > 0:
		return name + " " + strings.Join(did, "; ")
	case p.approved != "":
		return fmt.Sprintf("%s: nothing to resume: %s is approved already; the control plane starts it", name, p.approved)
	default:
		return name + ": nothing to resume: the rollout is not paused and no wave awaits approval"
	}
}

func runResume(ctx context.Context, out io.Writer, o *options) error {
	t, err := o.connect(ctx)
	if err != nil {
		return err
	}
	var p resumption
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		snap, err := newSnapshot(t.describe(), "", t.fed, nil)
		if err != nil {
			return err
		}
		p = planResume(snap, t.fed.GetAnnotations())
		if !p.unpause && p.approve == "" {
			return nil
		}
		var paused *bool
		if p.unpause {
			paused = new(false)
		}
		err = t.mergePatch(ctx, rolloutPatch(paused, p.approve, t.fed.GetResourceVersion()))
		if apierrors.IsConflict(err) {
			// Changed since it was read: decide again on what it is now.
			if err := t.reload(ctx, t.key()); err != nil {
				return err
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, p.says(t.kind.Describe(t.fed.GetName())))
	return err
}
