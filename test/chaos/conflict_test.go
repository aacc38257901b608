package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// bumpLabel and bumpAnnotation are what the second writer changes on
// every CPV, over and over.
const (
	bumpLabel      = "chaos.fedwarden.io/bumped"
	bumpAnnotation = "chaos.fedwarden.io/bump"
)

// A second writer updates every CPV again and again (a label and an
// annotation, with optimistic locking, as a controller of its own would)
// while 100 FederatedConfigMaps on two members are created and then each
// changed twice. The writers' updates cross: the second writer's get 409
// Conflict, and the controller-manager's syncs see CPVs that moved under
// them. Nothing is lost, everything converges, the second writer's marks
// stay, the CPVs record the copies as they are, and the members get one write per change: a bump is not a change.
func TestCPVsBumpedByASecondWriter(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startBed(t, 2)
	ns := b.namespace("conflict")
	l := b.ledger(ns)
	writes := b.watchWrites(ns)
	const resources = 100
	s := &stream{b: b, namespace: ns}
	for _, m := range b.Members {
		s.clusters = append(s.clusters, m.Name)
	}

	ctx, stop := context.WithCancel(t.Context())
	var (
		bumps, conflicts atomic.Int64
		marks            sync.Map // CPV name → the last annotation the second writer wrote
	)
	bumped := make(chan error, 1)
	go func() { bumped <- bumpCPVs(ctx, b.host, ns, &bumps, &conflicts, &marks) }()
	start := time.Now()
	for i := range resources {
		s.names = append(s.names, fmt.Sprintf("stream-%02d", i))
	}
	if err := createAll(t.Context(), b.host, s.objects(), 8); err != nil {
		t.Fatal(err)
	}
	// Two changes of each resource (templates for some, overrides for
	// others; see stream.next).
	if err := s.run(t.Context(), 1, 1+2*resources, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	report, took := b.waitClean(l, 3*time.Minute+loadSlack)
	stop()
	if err := <-bumped; err != nil {
		t.Fatal(err)
	}
	restConflicts, _, _ := b.cm.Sum(t.Context(), "rest_client_requests_total", `code="409"`)
	t.Logf("converged %s after the last change (%s in all): %s; the second writer made %d CPV updates and got %d conflicts; the controller-manager got %v",
		took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), report, bumps.Load(), conflicts.Load(), restConflicts)
	if bumps.Load() == 0 {
		t.Error("the second writer never updated a CPV")
	}
	// Every CPV keeps the second writer's last confirmed mark or a later
	// one (an update cut off by the end of the stream may have landed
	// unconfirmed): nothing of theirs was overwritten.
	var cpvs typesv1beta1.ClusterPropagatedVersionList
	if err := b.host.List(t.Context(), &cpvs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var overwritten []string
	for _, cpv := range cpvs.Items {
		want, ok := marks.Load(cpv.Name)
		if !ok {
			continue
		}
		last, _ := strconv.Atoi(want.(string))
		if got, err := strconv.Atoi(cpv.Annotations[bumpAnnotation]); err != nil || got < last {
			overwritten = append(overwritten, fmt.Sprintf("%s: %q, the second writer's last confirmed is %q", cpv.Name, cpv.Annotations[bumpAnnotation], want))
		}
	}
	if len(overwritten) > 0 {
		t.Errorf("%d CPVs lost the second writer's last annotation: %v", len(overwritten), overwritten)
	}
	// One create and two changes: at most three writes per copy.
	extra, offenders := writes.Beyond(func(string, string) int { return 3 })
	w, _ := writes.Count()
	t.Logf("member writes seen by watches: %v for %d creates and %d changes per member; beyond one per change: %d", w, resources, 2*resources, extra)
	if extra > 0 {
		t.Errorf("%d writes beyond one per change: %v", extra, offenders)
	}
	if dups := writes.Duplicates(); len(dups) > 0 {
		t.Errorf("%d writes applied what the copy already had: %v", len(dups), dups)
	}
}

// objects returns the stream's resources at sequence 0.
func (s *stream) objects() []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for _, name := range s.names {
		objs = append(objs, s.object(name, 0, 0))
	}
	return objs
}

// bumpCPVs updates every CPV of namespace, again and again until ctx ends,
// counting its updates and the conflicts it met, and noting in marks the
// last annotation it wrote to each.
func bumpCPVs(ctx context.Context, host client.Client, namespace string, bumps, conflicts *atomic.Int64, marks *sync.Map) error {
	for round := 0; ; round++ {
		var cpvs typesv1beta1.ClusterPropagatedVersionList
		if err := host.List(ctx, &cpvs, client.InNamespace(namespace)); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for i := range cpvs.Items {
			cpv := &cpvs.Items[i]
			if cpv.Labels == nil {
				cpv.Labels = map[string]string{}
			}
			if cpv.Annotations == nil {
				cpv.Annotations = map[string]string{}
			}
			cpv.Labels[bumpLabel] = strconv.Itoa(round % 2)
			cpv.Annotations[bumpAnnotation] = strconv.Itoa(round)
			err := host.Update(ctx, cpv)
			switch {
			case err == nil:
				// Noted even when ctx ended meanwhile: the update landed.
				bumps.Add(1)
				marks.Store(cpv.Name, cpv.Annotations[bumpAnnotation])
			case ctx.Err() != nil:
				return nil
			case apierrors.IsConflict(err):
				conflicts.Add(1)
			case apierrors.IsNotFound(err):
			default:
				return fmt.Errorf("bumping %s: %w", cpv.Name, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}
