package console

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// registry keeps one view per identity: created on the identity's first
// request, stopped when idle, and at most max at a time (the least recently
// used idle view is stopped to make room).
type registry struct {
	mu      sync.Mutex
	views   map[string]*view
	pending map[string]*sync.Mutex
	// refused are the identities whose view was stopped for seeing too
	// much, and why: for the idle timeout, none is started again for them.
	refused map[string]refusal
	limit   int
	idle    time.Duration
}

// refusal is why an identity gets no view, and since when.
type refusal struct {
	err   error
	since time.Time
}

func newRegistry(limit int, idle time.Duration) *registry {
	return &registry{views: map[string]*view{}, pending: map[string]*sync.Mutex{}, refused: map[string]refusal{}, limit: limit, idle: idle}
}

// get returns the view of id, starting it with start when there is none.
// Two first requests of one identity start one view.
func (g *registry) get(id string, start func() (*view, error)) (*view, error) {
	g.mu.Lock()
	if err := g.refusedLocked(id); err != nil {
		g.mu.Unlock()
		return nil, err
	}
	if v, ok := g.views[id]; ok {
		g.mu.Unlock()
		v.touch()
		return v, nil
	}
	lock, ok := g.pending[id]
	if !ok {
		lock = &sync.Mutex{}
		g.pending[id] = lock
	}
	g.mu.Unlock()

	lock.Lock()
	defer lock.Unlock()
	g.mu.Lock()
	if v, ok := g.views[id]; ok {
		g.mu.Unlock()
		v.touch()
		return v, nil
	}
	g.mu.Unlock()
	v, err := start()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pending, id)
	if err != nil {
		return nil, err
	}
	if err := g.refusedLocked(id); err != nil {
		// Refused while starting: it saw too much at once.
		v.stop()
		return nil, err
	}
	for len(g.views) >= g.limit {
		if !g.evictOldest() {
			break
		}
	}
	g.views[id] = v
	return v, nil
}

// refusedLocked is why id gets no view, if it is refused still; g.mu is
// held.
func (g *registry) refusedLocked(id string) error {
	r, ok := g.refused[id]
	if !ok {
		return nil
	}
	if time.Since(r.since) >= g.idle {
		delete(g.refused, id)
		return nil
	}
	return r.err
}

// evictOldest stops the view used least recently; false when there is none.
func (g *registry) evictOldest() bool {
	var oldest *view
	for _, v := range g.views {
		if oldest == nil || v.idleSince().Before(oldest.idleSince()) {
			oldest = v
		}
	}
	if oldest == nil {
		return false
	}
	oldest.stop()
	delete(g.views, oldest.id)
	return true
}

// drop stops the view of id, if any.
func (g *registry) drop(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.views[id]; ok {
		v.stop()
		delete(g.views, id)
	}
}

// remove stops v and forgets it, unless another view of its identity has
// taken its place.
func (g *registry) remove(v *view) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v.stop()
	if g.views[v.id] == v {
		delete(g.views, v.id)
	}
}

// refuse stops v, and starts no view for its identity, answering err,
// until the idle timeout has passed.
func (g *registry) refuse(v *view, err error) {
	g.mu.Lock()
	g.refused[v.id] = refusal{err: err, since: time.Now()}
	g.mu.Unlock()
	g.remove(v)
}

// reap stops the views idle for longer than the idle timeout, every
// interval, until ctx ends; then it stops them all.
func (g *registry) reap(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			g.mu.Lock()
			for id, v := range g.views {
				v.stop()
				delete(g.views, id)
			}
			g.mu.Unlock()
			return
		case <-t.C:
			g.mu.Lock()
			for id, v := range g.views {
				if v.hub.subscribers() == 0 && time.Since(v.idleSince()) > g.idle {
					v.stop()
					delete(g.views, id)
				}
			}
			for id := range g.refused {
				_ = g.refusedLocked(id) // forgets an expired refusal
			}
			g.mu.Unlock()
		}
	}
}

// size is the number of views running.
func (g *registry) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.views)
}

// withoutCredentials returns the part of cfg that says where the host is
// and how to verify it, and nothing that authenticates.
func withoutCredentials(cfg *rest.Config) *rest.Config {
	return &rest.Config{
		Host:    cfg.Host,
		APIPath: cfg.APIPath,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: cfg.ServerName, CAFile: cfg.CAFile, CAData: cfg.CAData,
		},
		UserAgent: cfg.UserAgent,
		QPS:       cfg.QPS,
		Burst:     cfg.Burst,
		Timeout:   cfg.Timeout,
		Proxy:     cfg.Proxy,
		Dial:      cfg.Dial,
	}
}
