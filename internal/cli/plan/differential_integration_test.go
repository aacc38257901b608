package plan_test

import (
	"testing"

	"github.com/fedwarden/fedwarden/test/plandiff"
)

// TestPlanAgreesWithTheController is the differential test of plan
// (test/plandiff) on the package's bed of two Push members: for 54 cases
// generated from a seed (placement by names, by label selector and by
// spread; an override for one cluster; a hand edit under Alert and under
// Enforce; placement drops; a rollout in waves; a new resource; a resync
// annotation; plan KIND/NAME), the action plan predicts in each cluster is
// the one the controller then takes. test/plandiff/pull runs the
// cases with a Pull member.
func TestPlanAgreesWithTheController(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	plandiff.Run(t, b, plandiff.Options{Seed: plandiff.Seed(t, 29), Cases: 54, Batches: 6, Require: plandiff.AllDimensions})
}
