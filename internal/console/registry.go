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
	limit   int
	idle    time.Duration
}

func newRegistry(limit int, idle time.Duration) *registry {
	return &registry{views: map[string]*view{}, pending: map[string]*sync.Mutex{}, limit: limit, idle: idle}
}

// get returns the view of id, starting it with start when there is none.
// Two first requests of one identity start one view.
func (g *registry) get(id string, start func() (*view, error)) (*view, error) {
	g.mu.Lock()
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
	for len(g.views) >= g.limit {
		if !g.evictOldest() {
			break
		}
	}
	g.views[id] = v
	return v, nil
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
