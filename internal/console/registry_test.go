package console

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeView is a view with no caches, for the registry's bookkeeping.
func fakeView(id string) *view {
	ctx, cancel := context.WithCancel(context.Background())
	v := &view{id: id, hub: newHub(), ctx: ctx, cancel: cancel}
	v.touch()
	return v
}

func TestRegistryBoundsAndIdle(t *testing.T) {
	t.Parallel()
	g := newRegistry(2, time.Hour)
	views := map[string]*view{}
	get := func(id string) *view {
		v, err := g.get(id, func() (*view, error) { views[id] = fakeView(id); return views[id], nil })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := get("a")
	time.Sleep(time.Millisecond)
	get("b")
	time.Sleep(time.Millisecond)
	if get("a") != a {
		t.Fatal("a second request of an identity started another view")
	}
	time.Sleep(time.Millisecond)
	get("c")
	if g.size() != 2 || views["b"].ctx.Err() == nil || a.ctx.Err() != nil {
		t.Errorf("with room for 2, the least recently used view (b) was not the one stopped: size %d", g.size())
	}

	// A view with an open stream is in use, however long ago its last request.
	sub := views["c"].hub.subscribe(Filter{}, "")
	g.idle = 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.reap(ctx, time.Millisecond); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for a.ctx.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a.ctx.Err() == nil || views["c"].ctx.Err() != nil {
		t.Errorf("after the idle timeout: a stopped %v, c (streaming) stopped %v", a.ctx.Err() != nil, views["c"].ctx.Err() != nil)
	}
	views["c"].hub.unsubscribe(sub)
	cancel()
	<-done
	if g.size() != 0 {
		t.Errorf("%d views left running after the console stopped", g.size())
	}
}

// TestRegistryRefuses: an identity whose view saw too much gets the error,
// and no new view, until the idle timeout has passed; removing a view
// leaves another view of the same identity alone.
func TestRegistryRefuses(t *testing.T) {
	t.Parallel()
	g := newRegistry(10, time.Hour)
	starts := 0
	start := func() (*view, error) { starts++; return fakeView("a"), nil }
	a, err := g.get("a", start)
	if err != nil {
		t.Fatal(err)
	}
	g.refuse(a, tooMany(5))
	if _, err := g.get("a", start); !errors.Is(err, errTooManyObjects) || starts != 1 || a.ctx.Err() == nil || g.size() != 0 {
		t.Errorf("after a refusal: err %v, %d starts, view stopped %v, %d views; want the refusal, 1 start, stopped, 0", err, starts, a.ctx.Err() != nil, g.size())
	}
	g.idle = 0
	if _, err := g.get("a", start); err != nil || starts != 2 {
		t.Errorf("after the idle timeout: err %v, %d starts; want a new view", err, starts)
	}

	old := fakeView("b")
	current, _ := g.get("b", func() (*view, error) { return fakeView("b"), nil })
	g.remove(old)
	if v, _ := g.get("b", func() (*view, error) { return nil, errors.New("started again") }); v != current || current.ctx.Err() != nil {
		t.Error("removing a stopped view of b dropped the current one")
	}
	g.remove(current)
	if g.size() != 1 || current.ctx.Err() == nil {
		t.Errorf("after removing b's view: %d views (want 1), stopped %v", g.size(), current.ctx.Err() != nil)
	}
}

func TestObjectLimit(t *testing.T) {
	t.Parallel()
	full := 0
	l := &objectLimit{max: 2, full: func() { full++ }}
	l.add(1)
	l.add(1)
	l.add(-1)
	l.add(1)
	if full != 0 {
		t.Fatalf("full at %d objects of 2", l.n.Load())
	}
	l.add(1)
	l.add(1)
	if full != 1 {
		t.Errorf("full called %d times past the limit, want once", full)
	}
}
