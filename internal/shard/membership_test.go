package shard

import (
	"slices"
	"testing"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		want                   []string
		served                 map[string]bool
		holds                  map[string]int
		drop, pending, claimed []string
	}{
		{name: "nothing yet: claim and wait for all", want: []string{"a", "b"},
			pending: []string{"a", "b"}, claimed: []string{"a", "b"}},
		{name: "steady", want: []string{"a", "b"}, served: map[string]bool{"a": true, "b": true},
			claimed: []string{"a", "b"}},
		{name: "a cluster assigned elsewhere is dropped and unclaimed", want: []string{"a"}, served: map[string]bool{"a": true, "b": true},
			drop: []string{"b"}, claimed: []string{"a"}},
		{name: "a dropped cluster still held stays claimed", want: []string{"a"}, served: map[string]bool{"a": true, "b": true}, holds: map[string]int{"b": 1},
			drop: []string{"b"}, claimed: []string{"a", "b"}},
		{name: "a new cluster waits, claimed", want: []string{"a", "c"}, served: map[string]bool{"a": true},
			pending: []string{"c"}, claimed: []string{"a", "c"}},
		{name: "nothing assigned here", served: map[string]bool{"a": true},
			drop: []string{"a"}, claimed: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := decide(tc.want, tc.served, tc.holds)
			if !slices.Equal(p.drop, tc.drop) || !slices.Equal(p.pending, tc.pending) || !slices.Equal(p.claims, tc.claimed) {
				t.Errorf("decide = drop %v, pending %v, claims %v; want %v, %v, %v", p.drop, p.pending, p.claims, tc.drop, tc.pending, tc.claimed)
			}
		})
	}
}
