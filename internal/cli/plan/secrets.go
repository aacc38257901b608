package plan

import (
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/planreport"
)

// scrubCluster takes a Secret's values out of the text plan prints of c
// besides the diff, which memberdiff redacts: its reason, its error and
// the member's answer to the dry run, which may quote the object (a
// policy's messageExpression, a webhook's answer). sc is the scrubber of
// the controller's sync (propagation.ScrubberOf, with the copies seen
// added); nil, for other kinds, leaves c as it is.
func scrubCluster(sc *scrub.Scrubber, c *planreport.Cluster) {
	if c.DryRun != nil {
		c.DryRun.Message = sc.Scrub(c.DryRun.Message, nil)
	}
	c.Reason, c.Error = sc.Scrub(c.Reason, nil), sc.Scrub(c.Error, nil)
}
