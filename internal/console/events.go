package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// event is one live update of a view's pages.
type event struct {
	// name is the SSE event name: row (a resource changed, data is its
	// FleetRow), removed (data names the resource's id) or clusters (a
	// FederatedCluster or an agent's Lease changed).
	name string
	// resource is the row a row or removed event is about.
	resource *row
	data     []byte
}

// subscriberBuffer is how many events a stream may be behind; a stream
// further behind is ended, and its page reconnects and reloads.
const subscriberBuffer = 1024

// heartbeat is how often an idle stream sends a comment, so that proxies
// keep it open and a closed page is noticed.
const heartbeat = 15 * time.Second

type subscriber struct {
	filter Filter
	// resource, when set, is the only resource the stream is about (the
	// resource page).
	resource string
	ch       chan event
	// lagged is closed when the stream fell behind.
	lagged chan struct{}
	once   sync.Once
}

func (s *subscriber) wants(e event) bool {
	if e.resource == nil {
		return true
	}
	if s.resource != "" {
		return e.resource.id == s.resource
	}
	return s.filter.matchesResource(e.resource.kind, e.resource.group, e.resource.namespace, e.resource.lower)
}

// hub fans a view's events out to its open streams. Publishing never
// waits on a stream.
type hub struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed chan struct{}
	once   sync.Once
}

func newHub() *hub { return &hub{subs: map[*subscriber]struct{}{}, closed: make(chan struct{})} }

func (h *hub) subscribe(f Filter, resource string) *subscriber {
	s := &subscriber{filter: f, resource: resource, ch: make(chan event, subscriberBuffer), lagged: make(chan struct{})}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *hub) publish(e event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !s.wants(e) {
			continue
		}
		select {
		case s.ch <- e:
		default:
			s.once.Do(func() { close(s.lagged) })
		}
	}
}

// close ends every stream.
func (h *hub) close() { h.once.Do(func() { close(h.closed) }) }

// serveEvents streams the view's events as Server-Sent Events. The query
// holds the fleet filter (ns, kind, q) of the page, or resource=ID for the
// resource page.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, v *view) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	sub := v.hub.subscribe(ParseFilter(r.URL.Query()), r.URL.Query().Get("resource"))
	defer v.hub.unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The page knows it is live once this arrives.
	fmt.Fprint(w, "retry: 2000\nevent: hello\ndata: {}\n\n")
	flusher.Flush()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-v.hub.closed:
			return
		case <-sub.lagged:
			return
		case <-beat.C:
			v.touch()
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case e := <-sub.ch:
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data); err != nil {
				return
			}
			// Send what else is queued in the same write.
			for more := true; more; {
				select {
				case e := <-sub.ch:
					fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
				default:
					more = false
				}
			}
			flusher.Flush()
		}
	}
}

// mustJSON encodes v, which cannot fail for the console's own types.
func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
