package rollout

import (
	"fmt"
	"slices"
	"strconv"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// NowReason says why d, decided on in, gives cluster the latest revision
// now, as fedwarden plan explains it.
func (d Decision) NowReason(in Input, cluster string) string {
	e := explained{in, d}
	latest := e.in.Latest
	got := fmt.Sprintf("gets revision %d now", latest)
	ec := e.in.Clusters[cluster]
	i := WaveOf(e.in.Waves, cluster)
	switch {
	case e.d.Status.FromRevision == 0:
		return got + ": a first revision goes to every cluster at once"
	case e.in.AllAtOnce == strconv.FormatInt(int64(latest), 10):
		return fmt.Sprintf("%s: %s: %s skips the waves", got, typesv1beta1.AnnotationAllAtOnce, e.in.AllAtOnce)
	case ec.Unchanged:
		return fmt.Sprintf("%s, wherever its wave is: its copy is the same as at revision %d", got, ec.Target)
	case ec.Target == latest:
		return got + ": its CPV entry targets it already"
	case i < 0 || i >= len(e.d.Status.Waves):
		return got
	case slices.Contains(e.d.Started, e.in.Waves[i].Name):
		return fmt.Sprintf("%s: wave %s starts", got, e.wave(i))
	}
	return fmt.Sprintf("%s: wave %s is %s", got, e.wave(i), e.d.Status.Waves[i].Phase)
}

// HeldReason says why d, decided on in, holds cluster at revision
// target: the rollout halted or paused, its wave awaits an approval or
// updates a few clusters at a time, or a wave before it is not complete
// yet.
func (d Decision) HeldReason(in Input, cluster string, target typesv1beta1.Revision) string {
	e := explained{in, d}
	held := fmt.Sprintf("held at revision %d", target)
	waves := e.d.Status.Waves
	i := WaveOf(e.in.Waves, cluster)
	j := slices.IndexFunc(waves, func(w typesv1beta1.WaveStatus) bool { return w.Phase != typesv1beta1.WaveComplete })
	if i < 0 || j < 0 || i >= len(waves) {
		return held
	}
	switch {
	case e.d.Halt != nil:
		return fmt.Sprintf("%s: the rollout of revision %d halted at wave %s (%s): %s; a new change of the template or overrides, or fedwarden rollout undo, starts a new rollout",
			held, e.in.Latest, e.wave(j), e.d.Halt.Reason, e.d.Halt.Message)
	case e.in.Spec.Paused:
		return fmt.Sprintf("%s: the rollout is paused (spec.rollout.paused) at wave %s: fedwarden rollout resume lets it go on", held, e.wave(j))
	case j == i && waves[i].Phase == typesv1beta1.WaveAwaitingApproval:
		return fmt.Sprintf("%s: wave %s waits for an approval: fedwarden rollout resume starts it", held, e.wave(i))
	case j == i && waves[i].Phase == typesv1beta1.WaveProgressing && e.in.Waves[i].Spec.MaxUnavailable != nil:
		return fmt.Sprintf("%s: wave %s updates %d of its clusters at a time (maxUnavailable), %s",
			held, e.wave(i), *e.in.Waves[i].Spec.MaxUnavailable, waves[i].Message)
	case j >= i:
		return fmt.Sprintf("%s: wave %s is %s%s", held, e.wave(i), waves[i].Phase, orEmpty(": ", waves[i].Message))
	}
	why := fmt.Sprintf("%s until wave %s starts; wave %s before it is %s%s", held, e.wave(i), e.wave(j), waves[j].Phase, orEmpty(": ", waves[j].Message))
	if e.in.Waves[i].Spec.Pause {
		why += fmt.Sprintf("; then wave %s waits for an approval (fedwarden rollout resume)", e.wave(i))
	}
	return why
}

// explained is a decision and its input, for the reasons above.
type explained struct {
	in Input
	d  Decision
}

// wave names wave i as plan's report numbers it: 2/3 main.
func (e explained) wave(i int) string {
	return fmt.Sprintf("%d/%d %s", i+1, len(e.in.Waves), e.in.Waves[i].Name)
}

// orEmpty is prefix and s, or "" when s is.
func orEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
