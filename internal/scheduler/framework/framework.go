package framework

import (
	"cmp"
	"fmt"
	"slices"
)

// Framework runs the enabled plugins of a Registry.
type Framework struct {
	enabled []string
	filters []FilterPlugin
	scores  []ScorePlugin
	selects []SelectPlugin
	assigns []AssignPlugin
}

// New builds the plugins named in enabled, in the registry's order.
func New(reg *Registry, enabled []string) (*Framework, error) {
	f := &Framework{}
	for _, name := range reg.names {
		if !slices.Contains(enabled, name) {
			continue
		}
		p := reg.factories[name]()
		f.enabled = append(f.enabled, name)
		if fp, ok := p.(FilterPlugin); ok {
			f.filters = append(f.filters, fp)
		}
		if sp, ok := p.(ScorePlugin); ok {
			f.scores = append(f.scores, sp)
		}
		if sp, ok := p.(SelectPlugin); ok {
			f.selects = append(f.selects, sp)
		}
		if ap, ok := p.(AssignPlugin); ok {
			f.assigns = append(f.assigns, ap)
		}
	}
	for _, name := range enabled {
		if err := reg.known(name); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Enabled tells whether the plugin called name runs.
func (f *Framework) Enabled(name string) bool { return slices.Contains(f.enabled, name) }

// Placement is one cluster of a decision.
type Placement struct {
	Name string
	// Replicas the cluster runs; nil means the template's.
	Replicas *int32
}

// Verdict is what one plugin said about one cluster (or, with Cluster
// empty, about the whole decision).
type Verdict struct {
	Cluster string
	Plugin  string
	Reasons []string
}

func (v Verdict) String() string {
	s := v.Plugin + ": " + joinReasons(v.Reasons)
	if v.Cluster != "" {
		s = v.Cluster + ": " + s
	}
	return s
}

// Decision is where the workload goes, and why not elsewhere.
type Decision struct {
	// Clusters chosen, and those kept, sorted by name.
	Clusters []Placement
	// RuledOut are the clusters a Filter plugin ruled out, or a Select
	// plugin left out, sorted by cluster.
	RuledOut []Verdict
	// Kept are the clusters a plugin would have dropped for their state
	// but that hold a copy, which they keep (see IntentPlugin); each is in
	// Clusters with the replicas of the last decision. Sorted by cluster.
	Kept []Verdict
	// Failure is set when no decision could be made: Clusters is then
	// empty and the caller keeps the last decision.
	Failure *Verdict
	// Notes are what Assign plugins want the user to know.
	Notes []Verdict
}

// Schedule decides where s.Workload goes among s.Clusters.
func (f *Framework) Schedule(s *State) Decision {
	var d Decision
	feasible, kept, failure := f.filter(s, &d)
	if failure != nil {
		d.Failure = failure
		return d
	}
	ranked, failure := f.score(s, feasible)
	if failure != nil {
		d.Failure = failure
		return d
	}
	selected := ranked
	for _, p := range f.selects {
		sel, res := p.Select(s, selected)
		if !res.IsSuccess() {
			d.Failure = &Verdict{Plugin: p.Name(), Reasons: res.Reasons}
			d.RuledOut = sortVerdicts(d.RuledOut)
			return d
		}
		for _, v := range leftOut(p.Name(), selected, sel) {
			if c := clusterNamed(selected, v.Cluster); keeps(s, p, c.Cluster) {
				d.Kept = append(d.Kept, v)
				kept = append(kept, c.Cluster)
				continue
			}
			d.RuledOut = append(d.RuledOut, v)
		}
		selected = sel.Chosen
	}
	replicas, failure := f.assign(s, selected, &d)
	if failure != nil {
		d.Failure = failure
		d.RuledOut = sortVerdicts(d.RuledOut)
		d.Kept = nil
		return d
	}
	for _, c := range selected {
		p := Placement{Name: c.Name}
		if n, ok := replicas[c.Name]; ok {
			p.Replicas = &n
		}
		d.Clusters = append(d.Clusters, p)
	}
	for _, c := range kept {
		d.Clusters = append(d.Clusters, keptPlacement(c))
	}
	slices.SortFunc(d.Clusters, func(a, b Placement) int { return cmp.Compare(a.Name, b.Name) })
	d.RuledOut = sortVerdicts(d.RuledOut)
	d.Kept = sortVerdicts(d.Kept)
	return d
}

// keeps tells whether c keeps its place although p drops it: it holds a
// copy, it is joined (an unjoined cluster has nothing to keep), p's
// verdict is about its state, not the user's intent, and c is not a surge
// whose failover ended (the failover policy's intent).
func keeps(s *State, p Plugin, c *Cluster) bool {
	return c.HasCopy && c.Joined && !isIntent(s, p) && !c.SurgeEnded
}

func isIntent(s *State, p Plugin) bool {
	ip, ok := p.(IntentPlugin)
	return ok && ip.IsIntent(s)
}

// keptPlacement is a kept cluster's place: the replicas the last decision
// gave it (the template's when it recorded none). The Assign plugins do not
// count it: they divide the replicas between the chosen clusters.
func keptPlacement(c *Cluster) Placement {
	p := Placement{Name: c.Name}
	if c.Previous != nil && c.Previous.Replicas != nil {
		n := *c.Previous.Replicas
		p.Replicas = &n
	}
	return p
}

func clusterNamed(cs []ScoredCluster, name string) ScoredCluster {
	i := slices.IndexFunc(cs, func(c ScoredCluster) bool { return c.Name == name })
	return cs[i]
}

// filter returns the clusters every Filter plugin lets through, and those
// a plugin rules out for their state that keep their copy; a plugin Error
// fails the whole decision.
func (f *Framework) filter(s *State, d *Decision) (feasible, kept []*Cluster, failure *Verdict) {
	filters := f.filtersFor(s)
	for _, c := range s.Clusters {
		v, p, code := filterOne(s, filters, c)
		switch {
		case code == Error:
			return nil, nil, &Verdict{Plugin: v.Plugin, Reasons: v.Reasons}
		case code == Unschedulable && keeps(s, p, c):
			d.Kept = append(d.Kept, *v)
			kept = append(kept, c)
		case code == Unschedulable:
			d.RuledOut = append(d.RuledOut, *v)
		default:
			feasible = append(feasible, c)
		}
	}
	return feasible, kept, nil
}

// filterOne runs the Filter plugins on c, those that express the user's
// intent first: a cluster the user excludes is ruled out as such, whatever
// its state.
func filterOne(s *State, filters []FilterPlugin, c *Cluster) (*Verdict, Plugin, Code) {
	for _, intent := range []bool{true, false} {
		for _, p := range filters {
			if isIntent(s, p) != intent {
				continue
			}
			if res := p.Filter(s, c); !res.IsSuccess() {
				return &Verdict{Cluster: c.Name, Plugin: p.Name(), Reasons: res.Reasons}, p, res.Code
			}
		}
	}
	return nil, nil, Success
}

// score ranks the feasible clusters: highest total score first, then those
// already scheduled (so that ties never move a workload), then by name.
func (f *Framework) score(s *State, feasible []*Cluster) ([]ScoredCluster, *Verdict) {
	ranked := make([]ScoredCluster, 0, len(feasible))
	for _, c := range feasible {
		sc := ScoredCluster{Cluster: c}
		for _, p := range f.scores {
			n, res := p.Score(s, c)
			if !res.IsSuccess() {
				return nil, &Verdict{Cluster: c.Name, Plugin: p.Name(), Reasons: res.Reasons}
			}
			sc.Score += n
		}
		ranked = append(ranked, sc)
	}
	slices.SortStableFunc(ranked, func(a, b ScoredCluster) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if a.Scheduled() != b.Scheduled() {
			if a.Scheduled() {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return ranked, nil
}

// assign runs the Assign plugins; the first that applies decides.
func (f *Framework) assign(s *State, selected []ScoredCluster, d *Decision) (map[string]int32, *Verdict) {
	for _, p := range f.assigns {
		replicas, res := p.Assign(s, selected)
		if !res.IsSuccess() {
			return nil, &Verdict{Plugin: p.Name(), Reasons: res.Reasons}
		}
		if len(res.Reasons) > 0 {
			d.Notes = append(d.Notes, Verdict{Plugin: p.Name(), Reasons: res.Reasons})
		}
		if replicas != nil {
			return replicas, nil
		}
	}
	return nil, nil
}

// leftOut returns a verdict for each cluster in before but not chosen.
func leftOut(plugin string, before []ScoredCluster, sel Selection) []Verdict {
	var out []Verdict
	for _, c := range before {
		if slices.ContainsFunc(sel.Chosen, func(a ScoredCluster) bool { return a.Name == c.Name }) {
			continue
		}
		why := sel.LeftOut[c.Name]
		if why == "" {
			why = "not chosen"
		}
		out = append(out, Verdict{Cluster: c.Name, Plugin: plugin, Reasons: []string{why}})
	}
	return out
}

func sortVerdicts(vs []Verdict) []Verdict {
	slices.SortStableFunc(vs, func(a, b Verdict) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return vs
}

func joinReasons(reasons []string) string {
	switch len(reasons) {
	case 0:
		return "no reason given"
	case 1:
		return reasons[0]
	}
	return fmt.Sprintf("%s (and %d more)", reasons[0], len(reasons)-1)
}
