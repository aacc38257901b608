package framework

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// named is a test plugin that rules out the clusters in out, scores by
// score, and optionally keeps only the first keep clusters.
type named struct {
	name  string
	out   map[string]string
	score map[string]int64
	keep  int
	fail  bool
	// intent makes the plugin's verdicts the user's intent.
	intent bool
}

func (p *named) Name() string { return p.name }

func (p *named) IsIntent(*State) bool { return p.intent }

func (p *named) Filter(_ *State, c *Cluster) Result {
	if why, ok := p.out[c.Name]; ok {
		if p.fail {
			return Fail("%s", why)
		}
		return RuleOut("%s", why)
	}
	return OK()
}

func (p *named) Score(_ *State, c *Cluster) (int64, Result) { return p.score[c.Name], OK() }

func (p *named) Select(_ *State, ranked []ScoredCluster) (Selection, Result) {
	if p.keep == 0 || p.keep >= len(ranked) {
		return Selection{Chosen: ranked}, OK()
	}
	return Selection{Chosen: ranked[:p.keep], LeftOut: map[string]string{ranked[p.keep].Name: "too many"}}, OK()
}

func registryOf(plugins ...*named) *Registry {
	r := &Registry{}
	for _, p := range plugins {
		r.Register(p.name, func() Plugin { return p })
	}
	return r
}

func TestParseEnabled(t *testing.T) {
	t.Parallel()
	r := registryOf(&named{name: "A"}, &named{name: "B"}, &named{name: "C"})
	tests := []struct {
		spec    string
		want    []string
		wantErr string
	}{
		{"*", []string{"A", "B", "C"}, ""},
		{"*,-B", []string{"A", "C"}, ""},
		{" C , A ", []string{"A", "C"}, ""},
		{"", nil, ""},
		{"*,-B,B", []string{"A", "B", "C"}, ""},
		{"*,-D", nil, `unknown scheduler plugin "D" (known: A, B, C)`},
	}
	for _, tt := range tests {
		got, err := r.ParseEnabled(tt.spec)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseEnabled(%q) error = %v, want %q", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseEnabled(%q) = %v, %v; want %v", tt.spec, got, err, tt.want)
		}
	}
}

func TestSchedule(t *testing.T) {
	t.Parallel()
	clusters := func() []*Cluster {
		return []*Cluster{{Name: "a"}, {Name: "b"}, {Name: "c", Previous: &Previous{}}, {Name: "d"}}
	}
	tests := []struct {
		name      string
		plugins   []*named
		want      []string
		ruledOut  []string
		failure   string
		explained string
	}{
		{
			name:    "all pass",
			plugins: []*named{{name: "F"}},
			want:    []string{"a", "b", "c", "d"},
		},
		{
			name:      "filtered, with reasons",
			plugins:   []*named{{name: "F", out: map[string]string{"b": "too small", "d": "not Ready"}}},
			want:      []string{"a", "c"},
			ruledOut:  []string{"b: F: too small", "d: F: not Ready"},
			explained: "scheduled to a, c; ruled out b: F: too small; d: F: not Ready",
		},
		{
			name:     "ties keep the scheduled cluster, then go by name",
			plugins:  []*named{{name: "S", keep: 2, score: map[string]int64{"a": 5, "b": 5, "c": 5, "d": 1}}},
			want:     []string{"a", "c"},
			ruledOut: []string{"b: S: too many", "d: S: not chosen"},
		},
		{
			name:     "score wins over being scheduled",
			plugins:  []*named{{name: "S", keep: 1, score: map[string]int64{"a": 9, "c": 5}}},
			want:     []string{"a"},
			ruledOut: []string{"b: S: not chosen", "c: S: too many", "d: S: not chosen"},
		},
		{
			name:      "a plugin error fails the decision",
			plugins:   []*named{{name: "F", out: map[string]string{"a": "bad selector"}, fail: true}},
			failure:   "F: bad selector",
			explained: "not scheduled: F: bad selector",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var names []string
			for _, p := range tt.plugins {
				names = append(names, p.name)
			}
			fw, err := New(registryOf(tt.plugins...), names)
			if err != nil {
				t.Fatal(err)
			}
			d := fw.Schedule(&State{Workload: &Workload{}, Clusters: clusters()})
			var got, ruledOut []string
			for _, p := range d.Clusters {
				got = append(got, p.Name)
			}
			for _, v := range d.RuledOut {
				ruledOut = append(ruledOut, v.String())
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(ruledOut, tt.ruledOut) {
				t.Errorf("decision = %v, ruled out %q; want %v, %q", got, ruledOut, tt.want, tt.ruledOut)
			}
			if failure := ""; d.Failure != nil {
				if failure = d.Failure.String(); failure != tt.failure {
					t.Errorf("failure = %q, want %q", failure, tt.failure)
				}
			} else if tt.failure != "" {
				t.Errorf("no failure, want %q", tt.failure)
			}
			if tt.explained != "" {
				if msg := d.Explain(1024); msg != tt.explained {
					t.Errorf("Explain = %q, want %q", msg, tt.explained)
				}
			}
		})
	}
}

func TestExplainIsBounded(t *testing.T) {
	t.Parallel()
	d := Decision{Clusters: []Placement{{Name: "a"}}}
	for i := range 100 {
		d.RuledOut = append(d.RuledOut, Verdict{Cluster: strings.Repeat("x", 20) + string(rune('a'+i%26)), Plugin: "P", Reasons: []string{"some reason"}})
	}
	msg := d.Explain(300)
	if len(msg) > 300 || !strings.Contains(msg, "more") || !strings.HasPrefix(msg, "scheduled to a; ruled out ") {
		t.Errorf("Explain(300) = %q (%d bytes)", msg, len(msg))
	}
	// Bounded never inside a character, whatever the limit.
	long := Decision{Clusters: []Placement{{Name: "a"}}, RuledOut: []Verdict{{Cluster: "b", Plugin: "P", Reasons: []string{strings.Repeat("é", 200)}}}}
	for limit := 40; limit < 48; limit++ {
		if msg := long.Explain(limit); len(msg) > limit || !utf8.ValidString(msg) {
			t.Errorf("Explain(%d) = %q (%d bytes): over the limit or cut inside a character", limit, msg, len(msg))
		}
	}
}

// WithoutRuledOutBy reads back what Explain wrote: two decisions that
// differ only in the clusters one plugin ruled out come out the same,
// whether the message lists them all or counts those that did not fit;
// any other difference stays.
func TestWithoutRuledOutBy(t *testing.T) {
	t.Parallel()
	decision := func(failure *Verdict, ruledOutByA ...string) Decision {
		d := Decision{Clusters: []Placement{{Name: "a"}}, Failure: failure,
			RuledOut: []Verdict{{Cluster: "full", Plugin: "Capacity", Reasons: []string{"no room; none at all"}}}}
		for _, c := range ruledOutByA {
			d.RuledOut = append(d.RuledOut, Verdict{Cluster: c, Plugin: "A", Reasons: []string{"not placed"}})
		}
		return d
	}
	failed := &Verdict{Plugin: "B", Reasons: []string{"cannot divide; weights add up to 0"}}
	for _, tt := range []struct {
		name  string
		x, y  Decision
		limit int
		same  bool
	}{
		{"a cluster A rules out joined", decision(nil, "c"), decision(nil, "c", "d"), 2048, true},
		{"and unjoined, no decision made", decision(failed, "c", "d"), decision(failed), 2048, true},
		{"counted, not listed", decision(nil, "c"), decision(nil, "c", "d", "e", "f", "g", "h"), 140, true},
		{"the failure changed", decision(failed, "c"), decision(&Verdict{Plugin: "B", Reasons: []string{"other"}}, "c"), 2048, false},
		{"another plugin's verdict changed", decision(nil, "c"), func() Decision {
			d := decision(nil, "c")
			d.RuledOut[0].Reasons = []string{"no room"}
			return d
		}(), 2048, false},
	} {
		x, y := WithoutRuledOutBy(tt.x.Explain(tt.limit), "A"), WithoutRuledOutBy(tt.y.Explain(tt.limit), "A")
		if (x == y) != tt.same {
			t.Errorf("%s: %q and %q; want the same: %v", tt.name, x, y, tt.same)
		}
	}
}

// A cluster that holds a copy loses it only to a plugin that expresses the
// user's intent, or because it left the federation; a plugin that judges
// the clusters' state keeps it, with the replicas it had, and says why.
func TestStateVerdictsKeepCopies(t *testing.T) {
	t.Parallel()
	six := int32(6)
	clusters := func() []*Cluster {
		return []*Cluster{
			{Name: "a", Joined: true, HasCopy: true, Previous: &Previous{Replicas: &six}},
			{Name: "b", Joined: true, HasCopy: true}, // recorded by the CPV's status only
			{Name: "c", Joined: true},
			{Name: "gone", HasCopy: true, Previous: &Previous{}}, // unjoined
		}
	}
	tests := []struct {
		name        string
		plugins     []*named
		restriction *Restriction
		want        []string // name=replicas, "-" for the template's
		kept        []string
		ruledOut    []string
	}{
		{
			name:     "a state filter keeps the clusters that hold a copy",
			plugins:  []*named{{name: "Capacity", out: map[string]string{"a": "too small", "b": "too small", "c": "too small", "gone": "not joined"}}},
			want:     []string{"a=6", "b=-"},
			kept:     []string{"a: Capacity: too small", "b: Capacity: too small"},
			ruledOut: []string{"c: Capacity: too small", "gone: Capacity: not joined"},
		},
		{
			name:     "an intent filter removes the copy",
			plugins:  []*named{{name: "Affinity", intent: true, out: map[string]string{"a": "not in clusters", "gone": "not joined"}}},
			want:     []string{"b=-", "c=-"},
			ruledOut: []string{"a: Affinity: not in clusters", "gone: Affinity: not joined"},
		},
		{
			name: "intent is judged first, whatever the order of the plugins",
			plugins: []*named{
				{name: "Capacity", out: map[string]string{"a": "too small", "b": "too small"}},
				{name: "Affinity", intent: true, out: map[string]string{"a": "not in clusters", "gone": "not joined"}},
			},
			want:     []string{"b=-", "c=-"},
			kept:     []string{"b: Capacity: too small"},
			ruledOut: []string{"a: Affinity: not in clusters", "gone: Affinity: not joined"},
		},
		{
			name:     "a state selection keeps what it leaves out",
			plugins:  []*named{{name: "Spread", keep: 1, score: map[string]int64{"c": 9}}},
			want:     []string{"a=6", "b=-", "c=-"},
			kept:     []string{"a: Spread: too many", "b: Spread: not chosen"},
			ruledOut: []string{"gone: Spread: not chosen"},
		},
		{
			name:     "a selection that is the user's intent removes the copy",
			plugins:  []*named{{name: "Spread", intent: true, keep: 1, score: map[string]int64{"c": 9}}},
			want:     []string{"c=-"},
			ruledOut: []string{"a: Spread: too many", "b: Spread: not chosen", "gone: Spread: not chosen"},
		},
		{
			name:        "a restriction about state keeps the clusters that hold a copy",
			restriction: &Restriction{Plugin: "FederatedNamespace", Clusters: []string{"c"}, Reason: "namespace shop is not federated"},
			want:        []string{"a=6", "b=-", "c=-"},
			kept:        []string{"a: FederatedNamespace: namespace shop is not federated", "b: FederatedNamespace: namespace shop is not federated"},
			ruledOut:    []string{"gone: FederatedNamespace: namespace shop is not federated"},
		},
		{
			name:        "a restriction that is the user's intent removes the copy",
			restriction: &Restriction{Plugin: "FederatedNamespace", Clusters: []string{"b", "c"}, Reason: "namespace shop is not federated to it", Intent: true},
			want:        []string{"b=-", "c=-"},
			ruledOut:    []string{"a: FederatedNamespace: namespace shop is not federated to it", "gone: FederatedNamespace: namespace shop is not federated to it"},
		},
		{
			name:        "the placement's intent wins over a restriction about state",
			plugins:     []*named{{name: "Affinity", intent: true, out: map[string]string{"a": "not in clusters"}}},
			restriction: &Restriction{Plugin: "FederatedNamespace", Reason: "namespace shop is not federated"},
			want:        []string{"b=-"},
			kept:        []string{"b: FederatedNamespace: namespace shop is not federated"},
			ruledOut:    []string{"a: Affinity: not in clusters", "c: FederatedNamespace: namespace shop is not federated", "gone: FederatedNamespace: namespace shop is not federated"},
		},
		{
			name:        "a state restriction is judged before the state plugins",
			plugins:     []*named{{name: "Capacity", out: map[string]string{"a": "too small"}}},
			restriction: &Restriction{Plugin: "FederatedNamespace", Clusters: []string{"b"}, Reason: "namespace shop is not federated"},
			want:        []string{"a=6", "b=-"},
			kept:        []string{"a: FederatedNamespace: namespace shop is not federated"},
			ruledOut:    []string{"c: FederatedNamespace: namespace shop is not federated", "gone: FederatedNamespace: namespace shop is not federated"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var names []string
			for _, p := range tt.plugins {
				names = append(names, p.name)
			}
			fw, err := New(registryOf(tt.plugins...), names)
			if err != nil {
				t.Fatal(err)
			}
			d := fw.Schedule(&State{Workload: &Workload{}, Clusters: clusters(), Restriction: tt.restriction})
			var got, kept, ruledOut []string
			for _, p := range d.Clusters {
				n := "-"
				if p.Replicas != nil {
					n = strconv.Itoa(int(*p.Replicas))
				}
				got = append(got, p.Name+"="+n)
			}
			for _, v := range d.Kept {
				kept = append(kept, v.String())
			}
			for _, v := range d.RuledOut {
				ruledOut = append(ruledOut, v.String())
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(kept, tt.kept) || !slices.Equal(ruledOut, tt.ruledOut) {
				t.Errorf("decision = %v, kept %q, ruled out %q; want %v, %q, %q", got, kept, ruledOut, tt.want, tt.kept, tt.ruledOut)
			}
		})
	}
}

func TestExplainSaysWhyACopyIsKept(t *testing.T) {
	t.Parallel()
	d := Decision{
		Clusters: []Placement{{Name: "a"}, {Name: "b"}},
		Kept:     []Verdict{{Cluster: "b", Plugin: "Capacity", Reasons: []string{"needs 2 cpu, none free"}}},
		RuledOut: []Verdict{{Cluster: "c", Plugin: "ClusterAffinity", Reasons: []string{"not in spec.placement.clusters"}}},
	}
	want := "scheduled to a, b; kept b, which holds a copy, despite Capacity: needs 2 cpu, none free; ruled out c: ClusterAffinity: not in spec.placement.clusters"
	if got := d.Explain(1024); got != want {
		t.Errorf("Explain = %q\nwant      %q", got, want)
	}
}
