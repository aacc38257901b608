package clustercache

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangingServer answers at once while it is not hung, and holds every
// request it gets while it is, until released.
type hangingServer struct {
	*httptest.Server
	hung    atomic.Bool
	release chan struct{}
}

func newHangingServer(t *testing.T) *hangingServer {
	s := &hangingServer{release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		if s.hung.Load() {
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() {
		close(s.release)
		s.Close()
	})
	return s
}

func testBreaker(onTrip func(string)) (*Breaker, *http.Client) {
	b := newBreaker("member-1", BreakerOptions{Stall: 100 * time.Millisecond, RequestTimeout: 2 * time.Second, MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second}, onTrip)
	return b, &http.Client{Transport: b.wrap(http.DefaultTransport)}
}

func get(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// A member that answers keeps its breaker closed, even with a request that
// takes longer than the stall limit while others are answered.
func TestBreakerStaysClosedWhileTheMemberAnswers(t *testing.T) {
	s := newHangingServer(t)
	b, c := testBreaker(nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		// Longer than Stall: only a stall with no answer at all trips.
		resp, err := c.Get(s.URL + "/slow")
		if err == nil {
			resp.Body.Close()
		}
	})
	deadline := time.Now().Add(400 * time.Millisecond)
	for time.Now().Before(deadline) {
		if err := get(c, s.URL); err != nil {
			t.Fatalf("request to an answering member: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	if b.Open() != nil || b.Err() != nil {
		t.Fatalf("breaker open for a member that answers: %v", b.Err())
	}
}

// Requests to a hung member are cancelled after the stall limit with
// ErrNotAnswering, the handler is told, later requests fail at once, and
// after the backoff one request tests the member: an answer closes it.
func TestBreakerOpensOnAHungMemberAndClosesOnAnAnswer(t *testing.T) {
	s := newHangingServer(t)
	trips := make(chan string, 4)
	b, c := testBreaker(func(cluster string) { trips <- cluster })
	if err := get(c, s.URL); err != nil {
		t.Fatalf("first request: %v", err)
	}
	s.hung.Store(true)
	errs := make(chan error, 5)
	for range 5 {
		go func() { errs <- get(c, s.URL) }()
	}
	for range 5 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrNotAnswering) {
				t.Fatalf("request to a hung member ended with %v, want ErrNotAnswering", err)
			}
		case <-time.After(time.Second):
			t.Fatal("requests to a hung member still wait after 10 times the stall limit")
		}
	}
	select {
	case cluster := <-trips:
		if cluster != "member-1" {
			t.Errorf("handler told of %q, want member-1", cluster)
		}
	case <-time.After(time.Second):
		t.Fatal("the handler was not told that the member does not answer")
	}
	if b.Open() == nil {
		t.Fatal("breaker closed after the member hung")
	}
	start := time.Now()
	if err := get(c, s.URL); !errors.Is(err, ErrNotAnswering) || time.Since(start) > 50*time.Millisecond {
		t.Fatalf("request while open: %v after %s, want ErrNotAnswering at once", err, time.Since(start))
	}

	// A health probe passes the open breaker and tests the member itself:
	// still hung, it gets no answer, and the breaker stays open.
	ctx, cancel := context.WithTimeout(Probing(t.Context()), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
	if _, err := c.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("probe of a hung member: %v, want its own timeout", err)
	}
	if b.Open() == nil {
		t.Fatal("a probe without an answer closed the breaker")
	}

	s.hung.Store(false)
	deadline := time.Now().Add(2 * time.Second)
	for b.Open() != nil && time.Now().Before(deadline) {
		_ = get(c, s.URL) // refused until the backoff is over, then a test
		time.Sleep(20 * time.Millisecond)
	}
	if b.Open() != nil {
		t.Fatal("breaker still open 2s after the member answers again (backoff 200ms)")
	}
	if err := get(c, s.URL); err != nil {
		t.Fatalf("request after the member answered again: %v", err)
	}
}

// A health probe's answer closes an open breaker at once, before its
// backoff is over.
func TestBreakerClosesOnAProbesAnswer(t *testing.T) {
	s := newHangingServer(t)
	b, c := testBreaker(nil)
	b.opts.MinBackoff, b.opts.MaxBackoff = time.Hour, time.Hour
	s.hung.Store(true)
	if err := get(c, s.URL); !errors.Is(err, ErrNotAnswering) {
		t.Fatalf("request to a hung member: %v, want ErrNotAnswering", err)
	}
	s.hung.Store(false)
	if err := get(c, s.URL); !errors.Is(err, ErrNotAnswering) {
		t.Fatalf("request within the backoff: %v, want ErrNotAnswering", err)
	}
	req, _ := http.NewRequestWithContext(Probing(t.Context()), http.MethodGet, s.URL+"/readyz", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("probe of a member that answers again: %v", err)
	}
	resp.Body.Close()
	if b.Open() != nil {
		t.Fatal("breaker still open after a probe was answered")
	}
}

// A watch has no request timeout; another request does.
func TestBreakerTimesOutRequestsButNotWatches(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // answered: the breaker does not trip
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer s.Close()
	defer close(release)
	b := newBreaker("member-1", BreakerOptions{Stall: time.Second, RequestTimeout: 100 * time.Millisecond, MinBackoff: time.Second, MaxBackoff: time.Second}, nil)
	c := &http.Client{Transport: b.wrap(http.DefaultTransport)}

	resp, err := c.Get(s.URL + "/api/v1/pods")
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	_, err = resp.Body.Read(make([]byte, 1))
	resp.Body.Close()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reading a request's body past its timeout: %v, want DeadlineExceeded", err)
	}

	resp, err = c.Get(s.URL + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer resp.Body.Close()
	read := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 1))
		read <- err
	}()
	select {
	case err := <-read:
		t.Fatalf("a watch ended after %v: %v", 100*time.Millisecond, err)
	case <-time.After(300 * time.Millisecond):
	}
	if b.Open() != nil {
		t.Fatal("breaker opened on a member that answered")
	}
}
