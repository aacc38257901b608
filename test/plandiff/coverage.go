package plandiff

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fedwarden/fedwarden/internal/planreport"
)

// Coverage counts: how many cases had each dimension, and how many
// clusters plan predicted each outcome for.
const (
	ByNames       = "placement by cluster names"
	BySelector    = "placement by label selector"
	BySpread      = "placement by spread"
	Override      = "an override for member-2"
	AlertEdit     = "a hand edit under Alert"
	EnforceEdit   = "a hand edit under Enforce"
	Waves         = "a rollout in waves"
	Resync        = "a resync annotation"
	NewResource   = "a new resource"
	HostPlan      = "plan KIND/NAME"
	MidRollout    = "a rollout in waves under way"
	Approval      = "an approval of a paused wave"
	AllAtOnce     = "a rollout all at once"
	Created       = "predicted Create"
	Updated       = "predicted Update now"
	Held          = "predicted Update held by a wave"
	Deleted       = "predicted Delete (a placement drop)"
	Unchanged     = "predicted Unchanged"
	NotPlaced     = "predicted NotPlaced"
	OverDrift     = "predicted a write over drift"
	PullPredicted = "a prediction for a Pull cluster"
)

// AllDimensions are the counts the cases of the Push bed must all have.
var AllDimensions = []string{ByNames, BySelector, BySpread, Override, AlertEdit, EnforceEdit, Waves, Resync, NewResource, HostPlan, MidRollout, Approval, AllAtOnce,
	Created, Updated, Held, Deleted, Unchanged, NotPlaced, OverDrift}

type coverage struct {
	mu     sync.Mutex
	counts map[string]int
}

func newCoverage() *coverage { return &coverage{counts: map[string]int{}} }

// add counts r's dimensions and plan's predictions for it.
func (c *coverage) add(r *caseRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range []*spec{r.start, r.rolled, &r.planned} {
		if s == nil {
			continue
		}
		for prefix, key := range map[string]string{"names": ByNames, "selector": BySelector, "spread": BySpread} {
			if strings.HasPrefix(s.placement.name, prefix) {
				c.counts[key]++
			}
		}
	}
	c.count(Override, r.planned.override > 0 || r.start != nil && r.start.override > 0)
	c.count(AlertEdit, r.edit != editNone && r.current().alert())
	c.count(EnforceEdit, r.edit != editNone && !r.current().alert())
	c.count(Waves, r.planned.waves)
	c.count(Resync, r.planned.resync != "")
	c.count(NewResource, r.start == nil)
	c.count(HostPlan, r.change.host && r.start != nil)
	c.count(MidRollout, r.rolled != nil)
	c.count(Approval, r.planned.approve != "" && r.planned.waves)
	c.count(AllAtOnce, r.planned.allAtOnce && r.planned.waves)
	for _, cl := range r.report.Clusters {
		c.count(Created, cl.Action == planreport.ActionCreate)
		c.count(Updated, cl.Action == planreport.ActionUpdate && cl.Now)
		c.count(Held, cl.Action == planreport.ActionUpdate && cl.Held)
		c.count(Deleted, cl.Action == planreport.ActionDelete)
		c.count(Unchanged, cl.Action == planreport.ActionUnchanged)
		c.count(NotPlaced, cl.Action == planreport.ActionNotPlaced)
		c.count(OverDrift, cl.OverwritesDrift != nil)
		c.count(PullPredicted, cl.Pull)
	}
}

func (c *coverage) count(key string, yes bool) {
	if yes {
		c.counts[key]++
	}
}

// check logs the counts, and fails t when one of require is 0.
func (c *coverage) check(t *testing.T, require []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(c.counts)) {
		lines = append(lines, fmt.Sprintf("%4d %s", c.counts[k], k))
	}
	t.Logf("coverage:\n%s", strings.Join(lines, "\n"))
	for _, k := range require {
		if c.counts[k] == 0 {
			t.Errorf("no case had %s: the generator or its seed leaves it out", k)
		}
	}
}
