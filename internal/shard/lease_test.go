package shard

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)

// replicaLease is the Lease of identity, renewed at renewed (by its own
// clock) for seconds, held unless holder is empty, listing claims.
func replicaLease(identity, holder string, renewed time.Time, seconds int32, claims string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName(identity), Labels: map[string]string{LabelReplica: "true"}},
		Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: &seconds, RenewTime: &metav1.MicroTime{Time: renewed}},
	}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	if claims != "" {
		l.Annotations = map[string]string{AnnotationClaims: claims}
	}
	return l
}

func TestALeaseExpiresOneDurationAfterItsRenewalWasSeenHere(t *testing.T) {
	t.Parallel()
	s := sightings{}
	// The writer's clock is an hour ahead: its renewTime does not count.
	ahead := replicaLease("cm-b", "cm-b", t0.Add(time.Hour), 15, `["c1"]`)
	r, ok := s.read(ahead, t0)
	if !ok || !r.expires.Equal(t0.Add(15*time.Second)) {
		t.Fatalf("first sighting: ok %v, expires %s, want %s", ok, r.expires, t0.Add(15*time.Second))
	}
	// The same renewal seen again keeps the time it was first seen.
	if r, _ = s.read(ahead, t0.Add(10*time.Second)); !r.expires.Equal(t0.Add(15 * time.Second)) {
		t.Errorf("the same renewal seen again expires at %s, want %s", r.expires, t0.Add(15*time.Second))
	}
	if r.live(t0.Add(16 * time.Second)) {
		t.Error("a Lease not renewed for more than its duration is still live")
	}
	// A new renewal counts from when it is seen.
	renewed := replicaLease("cm-b", "cm-b", t0.Add(time.Hour+20*time.Second), 15, `["c1"]`)
	if r, _ = s.read(renewed, t0.Add(20*time.Second)); !r.live(t0.Add(34 * time.Second)) {
		t.Errorf("a renewed Lease expires at %s, want one duration after it was seen", r.expires)
	}
	// A Lease seen for the first time counts from now, whatever its
	// renewTime says: its age is unknown.
	old := replicaLease("cm-c", "cm-c", t0.Add(-time.Hour), 15, "")
	if r, _ = s.read(old, t0); !r.live(t0.Add(14 * time.Second)) {
		t.Error("a Lease seen for the first time is not live for one duration")
	}
	s.forget(map[string]bool{LeaseName("cm-b"): true})
	if _, ok := s[LeaseName("cm-c")]; ok {
		t.Error("forget kept the sighting of a Lease that is gone")
	}
}

func TestReadingALease(t *testing.T) {
	t.Parallel()
	notReplica := replicaLease("cm-b", "cm-b", t0, 15, "")
	notReplica.Labels = nil
	other := replicaLease("cm-b", "cm-b", t0, 15, "")
	other.Name = "fedwarden-controller-manager"
	for _, tc := range []struct {
		name   string
		lease  *coordinationv1.Lease
		ok     bool
		live   bool
		claims []string
		all    bool
	}{
		{"held, with claims", replicaLease("cm-b", "cm-b", t0, 15, `["c1","c2"]`), true, true, []string{"c1", "c2"}, false},
		{"released", replicaLease("cm-b", "", t0, 15, `["c1"]`), true, false, []string{"c1"}, false},
		{"claims nothing", replicaLease("cm-b", "cm-b", t0, 15, `[]`), true, true, []string{}, false},
		{"unreadable claims block every takeover", replicaLease("cm-b", "cm-b", t0, 15, `c1,c2`), true, true, nil, true},
		{"not labelled as a replica's", notReplica, false, false, nil, false},
		{"not named as a replica's", other, false, false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, ok := sightings{}.read(tc.lease, t0)
			if ok != tc.ok || !ok {
				if ok != tc.ok {
					t.Errorf("ok = %v, want %v", ok, tc.ok)
				}
				return
			}
			if r.identity != "cm-b" || r.live(t0) != tc.live || !slices.Equal(r.claims, tc.claims) || r.all != tc.all {
				t.Errorf("read %+v (live %v), want identity cm-b, live %v, claims %v, all %v", r, r.live(t0), tc.live, tc.claims, tc.all)
			}
			if tc.all && !r.claimsCluster("anything") {
				t.Error("a Lease with unreadable claims does not claim every cluster")
			}
		})
	}
}

func TestClaimsReadBackAsWritten(t *testing.T) {
	t.Parallel()
	for _, claims := range [][]string{nil, {"b", "a"}, {"member-1"}} {
		raw := encodeClaims(claims)
		got, err := decodeClaims(raw)
		want := slices.Sorted(slices.Values(claims))
		if err != nil || !slices.Equal(got, want) || got == nil {
			t.Errorf("claims %v were written as %s and read as %v (%v), want %v", claims, raw, got, err, want)
		}
	}
}
