package framework

import (
	"slices"
	"strings"
	"testing"
)

// named is a test plugin that rules out the clusters in out, scores by
// score, and optionally keeps only the first keep clusters.
type named struct {
	name  string
	out   map[string]string
	score map[string]int64
	keep  int
	fail  bool
}

func (p *named) Name() string { return p.name }

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
}
