package framework

import "testing"

func TestWhyNotAndWhyKept(t *testing.T) {
	t.Parallel()
	d := Decision{
		Clusters: []Placement{{Name: "a"}, {Name: "b"}},
		RuledOut: []Verdict{
			{Cluster: "c", Plugin: "ClusterAffinity", Reasons: []string{"no label region=eu", "no label tier=gold"}},
			{Cluster: "c", Plugin: "ClusterReady", Reasons: []string{"not Ready"}},
		},
		Kept: []Verdict{{Cluster: "b", Plugin: "ClusterReady", Reasons: []string{"not Ready since 10:00", "offline"}}},
	}
	cases := []struct{ got, want string }{
		// Every reason of every plugin: plan shows one cluster at a time.
		{d.WhyNot("c"), "ClusterAffinity: no label region=eu; no label tier=gold; ClusterReady: not Ready"},
		{d.WhyNot("z"), "not chosen by the scheduler"},
		{d.WhyKept("b"), "kept, as it holds a copy, despite ClusterReady: not Ready since 10:00; offline"},
		{d.WhyKept("a"), ""},
		{Decision{Failure: &Verdict{Plugin: "ReplicaDivision", Reasons: []string{"no weight"}}}.WhyNot("a"),
			"no decision could be made: ReplicaDivision: no weight"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
	// Explain words a kept cluster as WhyKept does, with the first reason.
	if got, want := d.Explain(1000), "scheduled to a, b; kept b, which holds a copy, despite ClusterReady: not Ready since 10:00 (and 1 more)"; len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("Explain = %q, want it to start with %q", got, want)
	}
}
