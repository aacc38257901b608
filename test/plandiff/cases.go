package plandiff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// The members of the bed, in plan's order.
const (
	Member1 = "member-1"
	Member2 = "member-2"
)

var members = []string{Member1, Member2}

const (
	// SeedEnv overrides the generator's seed.
	SeedEnv = "FEDWARDEN_PLAN_DIFF_SEED"
	// tierLabel is the FederatedCluster label the selectors choose by.
	tierLabel = "plan-diff.fedwarden.io/tier"
	// handEditor is the field manager of hand edits in the members.
	handEditor = "hand-edit"
)

// topology is what the test gives each member for selectors and spread: a
// tier label and a region.
var topology = map[string]struct{ tier, region string }{
	Member1: {tier: "canary", region: "eu"},
	Member2: {tier: "main", region: "us"},
}

// placement is one spec.placement.
type placement struct {
	name string
	yaml string
	// start: a resource may start with it (one that places nowhere cannot:
	// its starting state would have no copy to compare).
	start bool
}

var placements = []placement{
	{name: "names both", yaml: "{clusters: [{name: member-1}, {name: member-2}]}", start: true},
	{name: "names member-1", yaml: "{clusters: [{name: member-1}]}", start: true},
	{name: "names member-2", yaml: "{clusters: [{name: member-2}]}", start: true},
	{name: "selector tier=canary", yaml: "{clusterSelector: {matchLabels: {" + tierLabel + ": canary}}}", start: true},
	{name: "selector tier in (canary, main)", yaml: "{clusterSelector: {matchExpressions: [{key: " + tierLabel + ", operator: In, values: [canary, main]}]}}", start: true},
	{name: "selector tier exists, member-1 excluded", yaml: "{clusterSelector: {matchExpressions: [{key: " + tierLabel + ", operator: Exists}]}, excludeClusters: [{name: member-1}]}", start: true},
	{name: "spread over at most 1 region", yaml: "{clusterSelector: {matchExpressions: [{key: " + tierLabel + ", operator: Exists}]}, spreadConstraints: [{spreadBy: region, maxGroups: 1}]}", start: true},
	{name: "spread over at least 2 regions", yaml: "{clusterSelector: {matchExpressions: [{key: " + tierLabel + ", operator: Exists}]}, spreadConstraints: [{spreadBy: region, minGroups: 2}]}", start: true},
	{name: "spread over at least 3 regions (unschedulable)", yaml: "{clusterSelector: {matchExpressions: [{key: " + tierLabel + ", operator: Exists}]}, spreadConstraints: [{spreadBy: region, minGroups: 3}]}"},
}

// spec is a FederatedDeployment web.
type spec struct {
	placement placement
	// override is member-2's replicas; 0: no override.
	override int
	// remediation is driftPolicy.remediation; "": the default, Enforce.
	remediation typesv1beta1.Remediation
	// waves: strategy Waves, member-1 then member-2, whose wave waits for
	// an approval (so that what it holds stays held).
	waves  bool
	image  string
	resync string
	// approve is fedwarden.io/approve-wave; allAtOnce sets
	// fedwarden.io/rollout-all-at-once.
	approve   string
	allAtOnce bool
}

func (s spec) String() string {
	parts := []string{"placement " + s.placement.name, "image " + s.image}
	if s.override > 0 {
		parts = append(parts, fmt.Sprintf("member-2 overridden to %d replicas", s.override))
	}
	if s.remediation != "" {
		parts = append(parts, "remediation "+string(s.remediation))
	}
	if s.waves {
		parts = append(parts, "waves (main paused)")
	}
	if s.resync != "" {
		parts = append(parts, "resync "+s.resync)
	}
	if s.approve != "" {
		parts = append(parts, "approve-wave "+s.approve)
	}
	if s.allAtOnce {
		parts = append(parts, "rollout-all-at-once")
	}
	return strings.Join(parts, ", ")
}

// alert tells whether s leaves drift as it is.
func (s spec) alert() bool { return s.remediation == typesv1beta1.RemediationAlert }

// doc is the manifest of s in namespace ns.
func (s spec) doc(ns string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata:\n  name: web\n  namespace: %s\n", ns)
	var annotations []string
	if s.resync != "" {
		annotations = append(annotations, fmt.Sprintf("%s: %q", typesv1beta1.AnnotationResync, s.resync))
	}
	if s.approve != "" {
		annotations = append(annotations, fmt.Sprintf("%s: %q", typesv1beta1.AnnotationApproveWave, s.approve))
	}
	if s.allAtOnce {
		annotations = append(annotations, typesv1beta1.AnnotationAllAtOnce+`: "true"`)
	}
	if len(annotations) > 0 {
		fmt.Fprintf(&b, "  annotations: {%s}\n", strings.Join(annotations, ", "))
	}
	fmt.Fprintf(&b, "spec:\n  placement: %s\n", s.placement.yaml)
	if s.override > 0 {
		fmt.Fprintf(&b, "  overrides: [{clusterName: %s, clusterOverrides: [{path: /spec/replicas, value: %d}]}]\n", Member2, s.override)
	}
	if s.remediation != "" {
		fmt.Fprintf(&b, "  driftPolicy: {remediation: %s}\n", s.remediation)
	}
	if s.waves {
		fmt.Fprintf(&b, "  rollout: {strategy: Waves, waves: [{name: canary, clusters: [%s]}, {name: main, clusters: [%s], pause: true}]}\n", Member1, Member2)
	}
	fmt.Fprintf(&b, `  template:
    metadata: {labels: {app: web}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "%s"}]}
`, s.image)
	return b.String()
}

// edit is what is done by hand to a member's copy before plan runs.
type edit string

const (
	editNone   edit = ""
	editScale  edit = "scaled to 5 by hand"
	editDelete edit = "deleted by hand"
)

// change turns the starting spec into the planned one. host: plan
// KIND/NAME, what the controller does next, and nothing is changed.
type change struct {
	name   string
	host   bool
	change func(r *rand.Rand, s spec) spec
}

var changes = []change{
	{name: "nothing: plan KIND/NAME", host: true, change: func(_ *rand.Rand, s spec) spec { return s }},
	{name: "the same manifest", change: func(_ *rand.Rand, s spec) spec { return s }},
	{name: "a new image", change: func(_ *rand.Rand, s spec) spec { s.image = nextImage(s.image); return s }},
	{name: "member-2's override", change: func(_ *rand.Rand, s spec) spec { s.override = 3 + (s.override+1)%2; return s }},
	{name: "the placement", change: func(r *rand.Rand, s spec) spec { s.placement = otherPlacement(r, s.placement); return s }},
	{name: "the placement and the image", change: func(r *rand.Rand, s spec) spec {
		s.placement, s.image = otherPlacement(r, s.placement), nextImage(s.image)
		return s
	}},
	{name: "remediation Enforce", change: func(_ *rand.Rand, s spec) spec { s.remediation = typesv1beta1.RemediationEnforce; return s }},
	{name: "a resync annotation", change: func(r *rand.Rand, s spec) spec { s.resync = "resync-" + strconv.Itoa(r.IntN(1000)); return s }},
	// Revision 2 is the one a rollout that started mid-way rolls out, and
	// the one a new image makes of a resource that did not.
	{name: "the approval of wave main of revision 2", change: func(r *rand.Rand, s spec) spec {
		s.approve = "2/1"
		if r.IntN(2) == 0 {
			s.image = nextImage(s.image)
		}
		return s
	}},
	{name: "all at once, and a new image", change: func(_ *rand.Rand, s spec) spec { s.allAtOnce, s.image = true, nextImage(s.image); return s }},
}

func nextImage(image string) string {
	if image == "nginx:1.25" {
		return "nginx:1.26"
	}
	return "nginx:1.25"
}

func otherPlacement(r *rand.Rand, p placement) placement {
	for {
		if q := placements[r.IntN(len(placements))]; q.name != p.name {
			return q
		}
	}
}

// Case is one generated case.
type Case struct {
	n int
	// start is the resource before the change; nil: the host does not have
	// it yet, and the change creates it.
	start *spec
	// rolled, when set, is applied once start has settled: a new image,
	// which a rollout in waves holds back from the paused wave main.
	rolled *spec
	edit   edit
	// editLast: the hand edit is made in the last member with a copy, else
	// in the first.
	editLast bool
	change   change
	// planned is the resource after the change.
	planned spec
}

func (c Case) String() string {
	start := "no resource"
	if c.start != nil {
		start = c.start.String()
		if c.rolled != nil {
			start += "; then " + c.rolled.image + ", held back from wave main"
		}
		if c.edit != editNone {
			which := "first"
			if c.editLast {
				which = "last"
			}
			start += "; its " + which + " copy " + string(c.edit)
		}
	}
	to := "created: " + c.planned.String()
	if c.start != nil {
		to = c.change.name + " → " + c.planned.String()
	}
	return fmt.Sprintf("case %d: from %s; change: %s", c.n, start, to)
}

// current is the resource as it is before the change: rolled if set,
// else start, which must be set.
func (c Case) current() spec {
	if c.rolled != nil {
		return *c.rolled
	}
	return *c.start
}

// Generate makes n cases from seed. The kind of change cycles, so that
// each comes often; every ninth case creates its resource; a rollout in waves is under
// way at the start of every other case that has one; the rest is
// drawn.
func Generate(seed uint64, n int) []Case {
	r := rand.New(rand.NewPCG(seed, 0x706c616e))
	var starts []placement
	for _, p := range placements {
		if p.start {
			starts = append(starts, p)
		}
	}
	cases := make([]Case, n)
	for i := range cases {
		s := spec{placement: starts[r.IntN(len(starts))], image: "nginx:1.25"}
		if r.IntN(3) == 0 {
			s.override = 3
		}
		if r.IntN(2) == 0 {
			s.remediation = typesv1beta1.RemediationAlert
		}
		s.waves = r.IntN(3) == 0
		c := Case{n: i, change: changes[i%len(changes)]}
		if i%9 == 4 {
			c.planned = s
			cases[i] = c
			continue
		}
		c.start = &s
		if s.waves && r.IntN(2) == 0 {
			rolled := s
			rolled.image = nextImage(s.image)
			c.rolled = &rolled
		}
		c.edit = []edit{editNone, editScale, editScale, editDelete}[r.IntN(4)]
		c.editLast = r.IntN(2) == 0
		c.planned = c.change.change(r, c.current())
		cases[i] = c
	}
	return cases
}

// Seed is the generator's seed: SeedEnv's value, else def, which makes
// the cases the same on every run.
func Seed(t *testing.T, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(SeedEnv)
	if v == "" {
		return def
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", SeedEnv, v, err)
	}
	return seed
}
