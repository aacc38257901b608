package console

import (
	"context"
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
