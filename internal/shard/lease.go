package shard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

const (
	// LeasePrefix starts the name of every replica's Lease:
	// fedwarden-replica-<identity>, in the control-plane namespace.
	LeasePrefix = "fedwarden-replica-"
	// LabelReplica, set to "true", marks a replica's Lease, so that the
	// replicas watch only each other's Leases.
	LabelReplica = "fedwarden.io/replica"
	// AnnotationClaims on a replica's Lease lists, as a JSON array, the
	// clusters the replica serves, is about to serve, or still finishes
	// writes to. No other replica starts serving a cluster while a live
	// Lease lists it.
	AnnotationClaims = "fedwarden.io/claims"
)

// LeaseName is the name of the Lease of the replica called identity.
func LeaseName(identity string) string { return LeasePrefix + identity }

// replica is what one Lease says about its replica, as this replica sees
// it.
type replica struct {
	identity string
	// claims are the clusters the Lease lists; all is set instead when
	// they cannot be read, so that the replica blocks every takeover until
	// it writes its Lease again.
	claims []string
	all    bool
	// expires is when, by this replica's clock, the Lease expires; zero
	// when it has no holder (released).
	expires time.Time
}

// live reports whether the Lease is held and not expired at now.
func (r replica) live(now time.Time) bool { return now.Before(r.expires) }

// claimsCluster reports whether the Lease lists cluster.
func (r replica) claimsCluster(cluster string) bool {
	return r.all || slices.Contains(r.claims, cluster)
}

// sighting is the last renewal of a Lease that this replica saw: the
// renewTime written in it, and when this replica first saw that renewal.
type sighting struct {
	renewed, seen time.Time
}

// sightings remembers, per Lease name, the renewals seen. A Lease expires
// one duration after its renewal was first seen here, not after its
// renewTime: the writer's clock may be ahead of this one, and a Lease
// judged by it would expire while its replica still serves. Seen late is
// safe: it only delays a takeover. A Lease seen for the first time counts
// from now, since how long ago it was renewed is unknown: after a start,
// a replica waits one duration for the Leases of replicas that died
// before.
type sightings map[string]sighting

// sight records lease as seen at now and returns when its current renewal
// was first seen.
func (s sightings) sight(lease *coordinationv1.Lease, now time.Time) time.Time {
	var renewed time.Time
	if lease.Spec.RenewTime != nil {
		renewed = lease.Spec.RenewTime.Time
	}
	prev, ok := s[lease.Name]
	if ok && prev.renewed.Equal(renewed) {
		return prev.seen
	}
	s[lease.Name] = sighting{renewed: renewed, seen: now}
	return now
}

// forget drops the sightings of Leases not in names.
func (s sightings) forget(names map[string]bool) {
	for name := range s {
		if !names[name] {
			delete(s, name)
		}
	}
}

// read returns what lease says, sighted at now. ok is false for a Lease
// that is not a replica's.
func (s sightings) read(lease *coordinationv1.Lease, now time.Time) (r replica, ok bool) {
	identity, found := strings.CutPrefix(lease.Name, LeasePrefix)
	if !found || identity == "" || lease.Labels[LabelReplica] != "true" {
		return replica{}, false
	}
	r.identity = identity
	seen := s.sight(lease, now)
	holder := lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	if holder && lease.Spec.LeaseDurationSeconds != nil {
		r.expires = seen.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
	}
	if raw, ok := lease.Annotations[AnnotationClaims]; ok {
		claims, err := decodeClaims(raw)
		r.claims, r.all = claims, err != nil
	}
	return r, true
}

// encodeClaims is the value of AnnotationClaims for clusters, sorted.
func encodeClaims(clusters []string) string {
	sorted := slices.Clone(clusters)
	slices.Sort(sorted)
	if sorted == nil {
		sorted = []string{}
	}
	raw, err := json.Marshal(sorted)
	if err != nil {
		panic(err) // a list of strings always marshals
	}
	return string(raw)
}

// decodeClaims reads a value of AnnotationClaims.
func decodeClaims(raw string) ([]string, error) {
	var claims []string
	if err := json.Unmarshal([]byte(raw), &claims); err != nil {
		return nil, fmt.Errorf("reading annotation %s: %w", AnnotationClaims, err)
	}
	return claims, nil
}
