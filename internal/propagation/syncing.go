package propagation

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// syncing holds back the watch events of a federated resource while it
// syncs, until the sync has recorded its writes. A member or the host often
// delivers the watch event of a write before the client has its answer,
// and so before the write is known as this process's own: without holding
// the event back, nearly every new resource was synced a second time for
// its own writes, and after a bulk create that second wave queued in front
// of the next new resources. An event that is not an echo of the sync's own
// writes enqueues the resource when the sync ends, as it would have at once.
type syncing struct {
	mu sync.Mutex
	// held has an entry while its resource syncs: the checks of the events
	// held back, each telling, once the sync's writes are recorded, whether
	// its event is news.
	held map[types.NamespacedName][]func() bool
}

// begin marks key as syncing.
func (s *syncing) begin(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[types.NamespacedName][]func() bool{}
	}
	s.held[key] = nil
}

// hold keeps news for the end of key's sync, and tells whether it did: it
// does not when key is not syncing, and the caller decides at once.
func (s *syncing) hold(key types.NamespacedName, news func() bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	held, ok := s.held[key]
	if !ok {
		return false
	}
	s.held[key] = append(held, news)
	return true
}

// end marks key's sync as over and tells whether an event held back during
// it is news. Every check runs: a check may note when a change was seen.
func (s *syncing) end(key types.NamespacedName) bool {
	s.mu.Lock()
	held := s.held[key]
	delete(s.held, key)
	s.mu.Unlock()
	news := false
	for _, check := range held {
		if check() {
			news = true
		}
	}
	return news
}
