package failover

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

var policy = Policy{Toleration: time.Minute, FailbackAfter: 5 * time.Minute, Automatic: true}

func TestJudge(t *testing.T) {
	t.Parallel()
	ready := Cluster{Name: "a", Ready: true, Since: ago(time.Hour), CopyCurrent: true}
	for _, tt := range []struct {
		name     string
		policy   Policy
		clusters []Cluster
		moves    []time.Time
		fail     []string
		back     []string
		waiting  map[string]string // cluster: a part of why
		next     time.Duration
	}{
		{
			name:     "not Ready for less than the toleration: waits until it ends",
			clusters: []Cluster{ready, {Name: "b", Since: ago(40 * time.Second)}},
			waiting:  map[string]string{"b": "not Ready for 40s of the 1m0s tolerated"},
			next:     20 * time.Second,
		},
		{
			name:     "not Ready for the toleration: fails",
			clusters: []Cluster{ready, {Name: "b", Since: ago(time.Minute)}},
			fail:     []string{"b"},
		},
		{
			name:     "an outage of the whole fleet moves nothing",
			clusters: []Cluster{{Name: "a", Since: ago(time.Hour)}, {Name: "b", Since: ago(time.Hour)}},
			waiting:  map[string]string{"a": "outage of the whole fleet", "b": "outage of the whole fleet"},
		},
		{
			name:     "back, for less than failbackAfter: waits",
			clusters: []Cluster{ready, {Name: "b", Ready: true, Since: ago(2 * time.Minute), CopyCurrent: true, FailedOver: true}},
			waiting:  map[string]string{"b": "Ready again for 2m0s of the 5m0s"},
			next:     3 * time.Minute,
		},
		{
			name:     "back for failbackAfter with its copy current: returns",
			clusters: []Cluster{ready, {Name: "b", Ready: true, Since: ago(5 * time.Minute), CopyCurrent: true, FailedOver: true}},
			back:     []string{"b"},
		},
		{
			name:     "back, but its copy is not current",
			clusters: []Cluster{ready, {Name: "b", Ready: true, Since: ago(time.Hour), FailedOver: true}},
			waiting:  map[string]string{"b": "not yet InSync and Healthy"},
		},
		{
			name:     "Manual waits for the command",
			policy:   Policy{Toleration: time.Minute, FailbackAfter: 5 * time.Minute},
			clusters: []Cluster{ready, {Name: "b", Ready: true, Since: ago(time.Hour), CopyCurrent: true, FailedOver: true}},
			waiting:  map[string]string{"b": "fedwarden failback"},
		},
		{
			name:     "Manual returns on the command",
			policy:   Policy{Toleration: time.Minute, FailbackAfter: 5 * time.Minute},
			clusters: []Cluster{ready, {Name: "b", Ready: true, Since: ago(time.Hour), CopyCurrent: true, FailedOver: true, FailbackRequested: true}},
			back:     []string{"b"},
		},
		{
			name:     "a failed-over cluster still down stays so",
			clusters: []Cluster{ready, {Name: "b", Since: ago(time.Hour), FailedOver: true}},
		},
		{
			name:     "flapping: a cluster that failed again starts its count again",
			clusters: []Cluster{ready, {Name: "b", Ready: true, Since: ago(10 * time.Second), CopyCurrent: true, FailedOver: true}},
			waiting:  map[string]string{"b": "Ready again for 10s"},
			next:     4*time.Minute + 50*time.Second,
		},
		{
			name:     "the moves per minute are bounded",
			policy:   Policy{Toleration: time.Minute, MaxMovesPerMinute: 2, Automatic: true},
			clusters: []Cluster{ready, {Name: "b", Since: ago(time.Hour)}, {Name: "c", Since: ago(time.Hour)}},
			moves:    []time.Time{ago(30 * time.Second), ago(2 * time.Minute)},
			fail:     []string{"b"},
			waiting:  map[string]string{"c": "at most 2 failovers a minute"},
			next:     30 * time.Second, // when the move of 30 s ago leaves the minute
		},
		{
			name:     "the bound reached by this verdict's own moves",
			policy:   Policy{Toleration: time.Minute, MaxMovesPerMinute: 1, Automatic: true},
			clusters: []Cluster{ready, {Name: "b", Since: ago(time.Hour)}, {Name: "c", Since: ago(time.Hour)}},
			fail:     []string{"b"},
			waiting:  map[string]string{"c": "at most 1 failovers a minute"},
			next:     time.Minute,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := policy
			if tt.policy != (Policy{}) {
				p = tt.policy
			}
			v := Judge(p, tt.clusters, tt.moves, now)
			if !slices.Equal(v.Fail, tt.fail) || !slices.Equal(v.Return, tt.back) || v.Next != tt.next {
				t.Errorf("fail %v, return %v, next %s; want %v, %v, %s", v.Fail, v.Return, v.Next, tt.fail, tt.back, tt.next)
			}
			if len(v.Waiting) != len(tt.waiting) {
				t.Errorf("waiting %v, want %v", v.Waiting, tt.waiting)
			}
			for c, why := range tt.waiting {
				if !strings.Contains(v.Waiting[c], why) {
					t.Errorf("waiting[%s] = %q, want it to say %q", c, v.Waiting[c], why)
				}
			}
		})
	}
}

// Judge is pure: the same inputs give the same verdict, so a controller
// restarted mid-failover resumes where it was.
func TestJudgeIsPure(t *testing.T) {
	t.Parallel()
	clusters := []Cluster{{Name: "a", Ready: true, Since: ago(time.Hour)}, {Name: "b", Since: ago(time.Hour)}, {Name: "c", Ready: true, Since: ago(time.Hour), CopyCurrent: true, FailedOver: true}}
	first, second := Judge(policy, clusters, nil, now), Judge(policy, clusters, nil, now)
	if !slices.Equal(first.Fail, second.Fail) || !slices.Equal(first.Return, second.Return) || first.Next != second.Next {
		t.Errorf("two verdicts differ: %+v and %+v", first, second)
	}
	if !slices.Equal(first.Fail, []string{"b"}) || !slices.Equal(first.Return, []string{"c"}) {
		t.Errorf("verdict %+v, want b to fail and c to return", first)
	}
}
