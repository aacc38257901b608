package plan

import (
	"fmt"
	"slices"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/planreport"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

// allWave is the name of the one wave of strategy All.
const allWave = "all"

// planWaves returns the rollout r, spec.rollout, takes the placed clusters
// through: strategy All, or no rollout, is one wave, "all"; Waves is
// rollout.Waves, as the rollout engine has them.
func planWaves(r *typesv1beta1.Rollout, placed []string, clusters []corev1beta1.FederatedCluster) (planreport.Rollout, error) {
	if r == nil || r.Strategy != typesv1beta1.RolloutWaves {
		return planreport.Rollout{Strategy: string(typesv1beta1.RolloutAll), Paused: r != nil && r.Paused,
			Waves: []planreport.Wave{{Name: allWave, Clusters: nonNil(slices.Clone(placed))}}}, nil
	}
	waves, err := rollout.Waves(r, placed, clusters)
	if err != nil {
		return planreport.Rollout{}, err
	}
	out := planreport.Rollout{Strategy: string(typesv1beta1.RolloutWaves), Paused: r.Paused}
	for _, w := range waves {
		out.Waves = append(out.Waves, planreport.Wave{Name: w.Name, Clusters: nonNil(w.Clusters), Pause: w.Spec.Pause,
			BakeSeconds: w.Spec.BakeSeconds, MaxUnavailable: w.Spec.MaxUnavailable})
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// timing says when the controller would make c's write: as the rollout
// engine decides (engine.timing) when plan could run it, else as
// approximateTiming guesses.
func (in *planInput) timing(c *planreport.Cluster, newContent bool) {
	if in.engine != nil {
		in.engine.timing(c, newContent)
		return
	}
	approximateTiming(in, c, newContent)
}

// approximateTiming guesses when the controller would make c's write, for
// when plan cannot run the rollout engine (it may not read the resource's
// revisions): at once, unless spec.rollout is Waves and the write carries
// a new revision of a resource that has one already, which a cluster gets
// when its wave starts (the first wave at once, unless it waits for an
// approval or the rollout is paused). A deletion, or a write that only
// heals drift or acts on kubefed.io/resync, is at once.
func approximateTiming(in *planInput, c *planreport.Cluster, newRevision bool) {
	c.Now = c.Action.Writes()
	r := in.rollout
	if !c.Now || c.Action == planreport.ActionDelete || !newRevision || r.Strategy != string(typesv1beta1.RolloutWaves) ||
		in.s.cpv.ResourceVersion == "" || c.WaveNumber == 0 {
		return
	}
	w := r.Waves[c.WaveNumber-1]
	switch {
	case r.Paused:
		c.Now = false
		c.Reason += "; the rollout is paused: the cluster gets the change once it is resumed (fedwarden rollout resume)"
	case c.WaveNumber > 1:
		c.Now = false
		c.Reason += fmt.Sprintf("; the cluster gets the change when wave %d/%d %s starts, once the waves before it are Healthy and in sync for their bakeSeconds",
			c.WaveNumber, len(r.Waves), w.Name)
		if w.Pause {
			c.Reason += ", and it is approved (fedwarden rollout resume)"
		}
	case w.Pause:
		c.Now = false
		c.Reason += "; the first wave waits for an approval (fedwarden rollout resume)"
	}
}
