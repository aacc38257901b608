package shard

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"strconv"
)

// LoadFactor bounds how many clusters one replica serves: at most
// ceil(LoadFactor × clusters / replicas). Closer to 1 spreads the clusters
// more evenly, but moves more of them when a replica comes or goes.
const LoadFactor = 1.25

// virtualNodes is the number of points each replica has on the ring: with
// a hundred, a replica's share of the ring is within a few percent of its
// fair share, so the load bound rarely has to push a cluster on.
const virtualNodes = 100

// Assign maps each cluster to one of replicas, by consistent hashing with
// bounded loads: every replica owns virtual nodes on a hash ring, a cluster
// goes to the owner of the first node at or after its own hash, and when
// that replica already serves its bound (see LoadFactor), to the owner of
// the next node that is under it.
//
// Assign depends only on the sets it is given, not on their order or on
// duplicates, so every replica that sees the same live replicas computes
// the same map. When a replica joins or leaves, a cluster moves only if its
// ring position now leads to another replica or a bound now pushes it on:
// about a share of 1/replicas of the clusters, not most of them. With no
// replica, every cluster is left out of the map.
func Assign(clusters, replicas []string) map[string]string {
	clusters, replicas = unique(clusters), unique(replicas)
	assigned := make(map[string]string, len(clusters))
	if len(replicas) == 0 {
		return assigned
	}
	ring := newRing(replicas)
	bound := int(math.Ceil(LoadFactor * float64(len(clusters)) / float64(len(replicas))))
	load := make(map[string]int, len(replicas))
	// Clusters are placed in name order, so that which of them a bound
	// pushes on is the same on every replica.
	for _, cluster := range clusters {
		replica := ring.firstUnder(point(cluster), func(r string) bool { return load[r] < bound })
		assigned[cluster] = replica
		load[replica]++
	}
	return assigned
}

// ring is the sorted virtual nodes of the replicas.
type ring struct {
	points []uint64
	owners []string
}

func newRing(replicas []string) ring {
	type node struct {
		point uint64
		owner string
	}
	nodes := make([]node, 0, len(replicas)*virtualNodes)
	for _, r := range replicas {
		for i := range virtualNodes {
			nodes = append(nodes, node{point(r + "#" + strconv.Itoa(i)), r})
		}
	}
	// Equal points (a hash collision) are ordered by owner, so that the
	// ring does not depend on the order replicas were given in.
	slices.SortFunc(nodes, func(a, b node) int {
		return cmp.Or(cmp.Compare(a.point, b.point), cmp.Compare(a.owner, b.owner))
	})
	r := ring{points: make([]uint64, len(nodes)), owners: make([]string, len(nodes))}
	for i, n := range nodes {
		r.points[i], r.owners[i] = n.point, n.owner
	}
	return r
}

// firstUnder walks the ring clockwise from p and returns the first owner
// that ok accepts. Assign's bound leaves room for every cluster, so some
// owner always does.
func (r ring) firstUnder(p uint64, ok func(string) bool) string {
	start := sort.Search(len(r.points), func(i int) bool { return r.points[i] >= p })
	for i := range r.points {
		owner := r.owners[(start+i)%len(r.points)]
		if ok(owner) {
			return owner
		}
	}
	panic("shard: no replica under the load bound")
}

// point is a name's position on the ring: the first 8 bytes of its
// SHA-256, well spread even for names that differ in one character.
func point(name string) uint64 {
	sum := sha256.Sum256([]byte(name))
	return binary.BigEndian.Uint64(sum[:8])
}

// unique returns names sorted, without duplicates or empty names.
func unique(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	return out
}
