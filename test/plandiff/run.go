package plandiff

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/planreport"

	"github.com/fedwarden/fedwarden/test/poll"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/plan"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/inprocess"
)

// settleTimeout bounds each wait for the controller.
const settleTimeout = 90 * time.Second

// Options say which cases run, and what the bed is.
type Options struct {
	// Seed and Cases are given to Generate.
	Seed  uint64
	Cases int
	// Batches run side by side; the cases of one batch go through each
	// step together, so that the controller works on them at once.
	Batches int
	// Pull are the members joined in Pull mode.
	Pull []string
	// EditIn, when set, is the member hand edits are made in when it has a
	// copy (a Pull member, say), rather than the case's first or last.
	EditIn string
	// Require are the coverage counts (see coverage) that must not be 0
	// with the test's own seed; one SeedEnv sets may leave some out.
	Require []string
}

// Run runs the cases of opts on b, one batch per parallel subtest, one
// subtest per case for its comparison. The members must be joined, and
// the propagation controller of Deployments running.
func Run(t *testing.T, b *inprocess.Bed, opts Options) {
	t.Helper()
	labelMembers(t, b)
	cases := Generate(opts.Seed, opts.Cases)
	t.Logf("%d cases from seed %d (%s=%d reproduces them)", len(cases), opts.Seed, SeedEnv, opts.Seed)
	cov := newCoverage()
	t.Cleanup(func() {
		if os.Getenv(SeedEnv) == "" {
			cov.check(t, opts.Require)
		} else {
			cov.check(t, nil)
		}
	})
	for i := range opts.Batches {
		var batch []Case
		for j := i; j < len(cases); j += opts.Batches {
			batch = append(batch, cases[j])
		}
		t.Run(fmt.Sprintf("batch-%d", i), func(t *testing.T) {
			t.Parallel()
			runBatch(t, b, opts, cov, batch)
		})
	}
}

// labelMembers gives the members the tier labels and regions the
// placements select by.
func labelMembers(t *testing.T, b *inprocess.Bed) {
	t.Helper()
	for name, topo := range topology {
		fc := &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}},"spec":{"region":%q}}`, tierLabel, topo.tier, topo.region)
		if err := b.Host.Patch(t.Context(), fc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
}

// caseRun is a case on its way through the steps.
type caseRun struct {
	Case
	opts Options
	ns   string
	// edited is the member whose copy was edited by hand, editedCopy
	// that copy as the edit left it (as it was, for a deletion).
	edited     string
	editedCopy *appsv1.Deployment
	report     planreport.Report
	// planJSON is plan's output, the rendered copies cut short.
	planJSON string
	before   state
}

func (r *caseRun) label() string {
	var edited string
	if r.edited != "" {
		edited = "; edited in " + r.edited
	}
	return fmt.Sprintf("%s (namespace %s%s; seed %d)", r.Case, r.ns, edited, r.opts.Seed)
}

// runBatch takes the cases of batch through the steps together.
func runBatch(t *testing.T, b *inprocess.Bed, opts Options, cov *coverage, batch []Case) {
	runs := make([]*caseRun, len(batch))
	for i, c := range batch {
		runs[i] = &caseRun{Case: c, opts: opts, ns: b.Namespace(t, fmt.Sprintf("diff-%d", c.n))}
	}
	for _, r := range runs {
		if r.start != nil {
			apply(t, b, r.ns, *r.start)
		}
	}
	for _, r := range runs {
		if r.start != nil {
			awaitSettled(t, b, r, *r.start, "the starting state")
		}
	}
	for _, r := range runs {
		if r.rolled != nil {
			apply(t, b, r.ns, *r.rolled)
		}
	}
	for _, r := range runs {
		if r.rolled != nil {
			awaitSettled(t, b, r, *r.rolled, "the rollout of "+r.rolled.image)
		}
	}
	for _, r := range runs {
		if r.start != nil && r.edit != editNone {
			editByHand(t, b, r)
		}
	}
	for _, r := range runs {
		if r.edited != "" {
			awaitHandEdit(t, b, r)
		}
	}
	for _, r := range runs {
		r.report, r.planJSON = runPlan(t, b, r)
		r.before = observe(t, b, r.ns)
		cov.add(r)
	}
	for _, r := range runs {
		if !r.change.host || r.start == nil {
			apply(t, b, r.ns, r.planned)
		}
	}
	for _, r := range runs {
		awaitChange(t, b, r)
		after := observe(t, b, r.ns)
		t.Run(fmt.Sprintf("case-%d", r.n), func(t *testing.T) { compare(t, r, after) })
	}
}

// apply creates the resource of s in ns, or updates the one there to s.
func apply(t *testing.T, b *inprocess.Bed, ns string, s spec) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s.doc(ns)), &u.Object); err != nil {
		t.Fatal(err)
	}
	// The controller writes the resource's status meanwhile.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(u.GroupVersionKind())
		err := b.Host.Get(t.Context(), client.ObjectKeyFromObject(u), current)
		switch {
		case apierrors.IsNotFound(err):
			return b.Host.Create(t.Context(), u)
		case err != nil:
			return err
		}
		u.SetResourceVersion(current.GetResourceVersion())
		return b.Host.Update(t.Context(), u)
	})
	if err != nil {
		t.Fatalf("applying %s in %s: %v", s, ns, err)
	}
}

// editByHand edits or deletes r's first or last member copy.
func editByHand(t *testing.T, b *inprocess.Bed, r *caseRun) {
	t.Helper()
	s := observe(t, b, r.ns)
	order := slices.Clone(members)
	if r.editLast {
		slices.Reverse(order)
	}
	if r.opts.EditIn != "" {
		order = slices.Insert(order, 0, r.opts.EditIn)
	}
	for _, m := range order {
		if s.copies[m] != nil {
			r.edited = m
			break
		}
	}
	if r.edited == "" {
		t.Fatalf("%s: no member has a copy to edit; state %s", r.label(), s)
	}
	d := s.copies[r.edited]
	var err error
	switch r.edit {
	case editScale:
		err = b.Members[r.edited].Patch(t.Context(), d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`)), client.FieldOwner(handEditor))
	case editDelete:
		err = b.Members[r.edited].Delete(t.Context(), d)
	}
	if err != nil {
		t.Fatalf("%s: editing %s's copy by hand: %v", r.label(), r.edited, err)
	}
	r.editedCopy = d
}

// awaitHandEdit waits until the controller has seen the hand edit: under
// Alert, the CPV reports it and the copy stays edited; under Enforce, the
// copy is written back (created again), and the CPV's entry says it is in
// sync, or held by a rollout in waves.
func awaitHandEdit(t *testing.T, b *inprocess.Bed, r *caseRun) {
	t.Helper()
	poll.Eventually(t, settleTimeout, r.label()+": the controller to see the hand edit of "+r.edited, func(ctx context.Context) (bool, string) {
		s, err := readState(ctx, b, r.ns)
		if err != nil {
			return false, err.Error()
		}
		if ok, why := s.settled(r.current(), r.opts.Pull); !ok {
			return false, why + "; " + s.String()
		}
		entry, cp := s.entries[r.edited], s.copies[r.edited]
		switch {
		case r.current().alert() && r.edit == editScale:
			return entry.State == typesv1beta1.ModifiedOutOfBand && cp != nil && replicasOf(cp) == 5, s.String()
		case r.current().alert():
			return entry.State == typesv1beta1.Missing && cp == nil, s.String()
		case cp == nil || entry.State != typesv1beta1.InSync && entry.State != typesv1beta1.RolloutPending:
			return false, s.String()
		case r.edit == editScale:
			return cp.ResourceVersion != r.editedCopy.ResourceVersion && replicasOf(cp) != 5, s.String()
		default:
			return cp.UID != r.editedCopy.UID, s.String()
		}
	})
}

// runPlan runs plan on r's change with -o json.
func runPlan(t *testing.T, b *inprocess.Bed, r *caseRun) (planreport.Report, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), r.ns+".yaml")
	if err := os.WriteFile(file, []byte(r.planned.doc(r.ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-f", file}
	if r.change.host && r.start != nil {
		args = []string{"fdeploy/web", "-n", r.ns}
	}
	args = append(args, "-o", "json", "--host-kubeconfig", b.Fed.Host.Kubeconfig)
	stdout, stderr, code := clitest.Execute(plan.NewCommand, args...)
	var rep planreport.Report
	if err := json.Unmarshal([]byte(stdout), &rep); (code != 0 && code != 1) || err != nil {
		t.Fatalf("%s: plan %v: exit code %d, %v; stdout:\n%s\nstderr:\n%s", r.label(), args, code, err, stdout, stderr)
	}
	return rep, shown(t, rep)
}

// shown is r as plan prints it, without the rendered copies.
func shown(t *testing.T, r planreport.Report) string {
	t.Helper()
	r.Clusters = slices.Clone(r.Clusters)
	for i := range r.Clusters {
		r.Clusters[i].Rendered = map[string]any{"…": "…"}
	}
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func observe(t *testing.T, b *inprocess.Bed, ns string) state {
	t.Helper()
	s, err := readState(t.Context(), b, ns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// awaitSettled waits until the controller is done with sp in r's
// namespace.
func awaitSettled(t *testing.T, b *inprocess.Bed, r *caseRun, sp spec, what string) {
	t.Helper()
	poll.Eventually(t, settleTimeout, r.label()+": the controller to settle "+what, func(ctx context.Context) (bool, string) {
		s, err := readState(ctx, b, r.ns)
		if err != nil {
			return false, err.Error()
		}
		ok, why := s.settled(sp, r.opts.Pull)
		return ok, why + "; " + s.String()
	})
}

// awaitChange waits until the controller has settled r's change, and
// shows what plan predicted when it does not.
func awaitChange(t *testing.T, b *inprocess.Bed, r *caseRun) {
	t.Helper()
	done := false
	defer func() {
		if !done {
			t.Logf("%s: plan -o json was:\n%s\nbefore the change: %s", r.label(), r.planJSON, r.before)
		}
	}()
	awaitSettled(t, b, r, r.planned, "the change")
	done = true
}
