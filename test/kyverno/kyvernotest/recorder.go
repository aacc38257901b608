package kyvernotest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Seen is one version of an object, and when a watch delivered it.
type Seen struct {
	Obj *unstructured.Unstructured
	At  time.Time
}

// Recorder keeps every version of the objects of one resource in one
// namespace that a watch delivered, in order, so that a test can wait for
// a state that lasts only a moment (a CPV drifted for a second).
type Recorder struct {
	mu       sync.Mutex
	versions []Seen
	changed  chan struct{} // closed and replaced on each new version
}

// Record starts watching resource gvr in namespace; it stops with ctx.
func Record(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource, namespace string) (*Recorder, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &Recorder{changed: make(chan struct{})}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	inf := factory.ForResource(gvr).Informer()
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.observe,
		UpdateFunc: func(_, obj any) { r.observe(obj) },
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("watching %s in %s: the informer did not sync", gvr, namespace)
	}
	return r, nil
}

func (r *Recorder) observe(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, Seen{Obj: u.DeepCopy(), At: time.Now()})
	close(r.changed)
	r.changed = make(chan struct{})
}

// Mark is the position of the next version to be recorded: Wait(from:
// Mark()) sees only what happens after.
func (r *Recorder) Mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.versions)
}

// Wait returns the first version of the object name at or after position
// from that satisfies ok, and the position after it, waiting at most
// timeout. On timeout the error shows the latest version of name.
func (r *Recorder) Wait(ctx context.Context, name string, from int, timeout time.Duration, ok func(*unstructured.Unstructured) bool) (Seen, int, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		var latest *unstructured.Unstructured
		for i := from; i < len(r.versions); i++ {
			s := r.versions[i]
			if s.Obj.GetName() != name {
				continue
			}
			latest = s.Obj
			if ok(s.Obj) {
				r.mu.Unlock()
				return s, i + 1, nil
			}
		}
		from = max(from, len(r.versions))
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Seen{}, from, ctx.Err()
		case <-deadline.C:
			return Seen{}, from, fmt.Errorf("%s: no version as wanted within %s; latest seen: %v", name, timeout, describe(latest))
		}
	}
}

// WaitLatest waits at most timeout until the latest version of the object
// name satisfies ok, and returns it: what a user polling the object sees.
func (r *Recorder) WaitLatest(ctx context.Context, name string, timeout time.Duration, ok func(*unstructured.Unstructured) bool) (Seen, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		var latest Seen
		for i := len(r.versions) - 1; i >= 0; i-- {
			if r.versions[i].Obj.GetName() == name {
				latest = r.versions[i]
				break
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if latest.Obj != nil && ok(latest.Obj) {
			return latest, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Seen{}, ctx.Err()
		case <-deadline.C:
			return Seen{}, fmt.Errorf("%s: the latest version is not as wanted after %s: %v", name, timeout, describe(latest.Obj))
		}
	}
}

// Hold watches the object name for window and fails with the first of its
// versions, at or after position from, that does not satisfy ok: for a
// state that must last, such as no new value after a heal. With window 0
// it checks only the versions recorded so far.
func (r *Recorder) Hold(ctx context.Context, name string, from int, window time.Duration, ok func(*unstructured.Unstructured) bool) error {
	end := time.NewTimer(window)
	defer end.Stop()
	for ended := false; ; {
		r.mu.Lock()
		for ; from < len(r.versions); from++ {
			if s := r.versions[from]; s.Obj.GetName() == name && !ok(s.Obj) {
				r.mu.Unlock()
				return fmt.Errorf("%s: a version seen at %s is not as it should stay: %v", name, s.At.Format(time.RFC3339Nano), describe(s.Obj))
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if ended {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-end.C:
			ended = true // check what came meanwhile, once more
		}
	}
}

// Latest returns the latest version of the object name, if any was seen.
func (r *Recorder) Latest(name string) (*unstructured.Unstructured, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.versions) - 1; i >= 0; i-- {
		if r.versions[i].Obj.GetName() == name {
			return r.versions[i].Obj, true
		}
	}
	return nil, false
}

func describe(obj *unstructured.Unstructured) any {
	if obj == nil {
		return "none"
	}
	return map[string]any{"annotations": obj.GetAnnotations(), "resourceVersion": obj.GetResourceVersion(), "status": obj.Object["status"], "results": obj.Object["results"]}
}
