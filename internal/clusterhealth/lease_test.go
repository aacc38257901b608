package clusterhealth

import (
	"testing"
	"time"
)

func TestSightTimesRenewalsByTheHostsClock(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ahead, behind := now.Add(time.Hour), now.Add(-time.Hour)
	tests := []struct {
		name     string
		prev     *sighting
		renewed  time.Time
		wantSeen time.Time
	}{{
		name: "a renewal seen before keeps the time it was first seen, however far ahead its renewTime", prev: &sighting{renewed: ahead, seen: now.Add(-time.Minute)},
		renewed: ahead, wantSeen: now.Add(-time.Minute),
	}, {
		name: "a new renewal from a clock behind counts from now", prev: &sighting{renewed: behind, seen: now.Add(-10 * time.Second)},
		renewed: behind.Add(10 * time.Second), wantSeen: now,
	}, {
		name: "a new renewal from a clock ahead counts from now", prev: &sighting{renewed: ahead, seen: now.Add(-10 * time.Second)},
		renewed: ahead.Add(10 * time.Second), wantSeen: now,
	}, {
		name:    "the first renewal seen, from a clock ahead, counts from now",
		renewed: ahead, wantSeen: now,
	}, {
		name:    "the first renewal seen, in the past, counts from its renewTime: an agent stopped long ago is not Ready after a restart",
		renewed: behind, wantSeen: behind,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sight(tt.prev, tt.renewed, now)
			if !got.seen.Equal(tt.wantSeen) || !got.renewed.Equal(tt.renewed) {
				t.Errorf("sight() = seen %s, renewed %s; want seen %s, renewed %s", got.seen, got.renewed, tt.wantSeen, tt.renewed)
			}
		})
	}
}
