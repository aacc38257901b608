package clustercache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// ErrNotAnswering is wrapped by the errors of requests to a member whose
// breaker is open: its API server let requests wait without any answer
// for longer than the breaker's stall limit. Such a request was cancelled,
// or never sent.
var ErrNotAnswering = errors.New("the API server is not answering")

// BreakerOptions tune the breaker every member's requests pass through.
type BreakerOptions struct {
	// Stall: when requests have waited this long for a member's answer and
	// none came back in that time, the member is not answering. The
	// waiting requests are cancelled, and the breaker opens.
	Stall time.Duration
	// RequestTimeout bounds each request that is not a watch, from sending
	// it to closing its body: a member that answers others but holds one
	// request costs its caller no more than this.
	RequestTimeout time.Duration
	// MinBackoff is how long an opened breaker refuses requests before it
	// lets one through to test the member; every failed test doubles it,
	// up to MaxBackoff. An answer closes the breaker and resets it.
	MinBackoff, MaxBackoff time.Duration
}

// DefaultBreakerOptions answer within seconds for a member that hangs, and
// never trip on a healthy one under load, whose answers come back in
// milliseconds to a second.
func DefaultBreakerOptions() BreakerOptions {
	return BreakerOptions{Stall: 3 * time.Second, RequestTimeout: 60 * time.Second, MinBackoff: 5 * time.Second, MaxBackoff: 2 * time.Minute}
}

// Validate reports options that cannot work.
func (o BreakerOptions) Validate() error {
	var errs []error
	if o.Stall <= 0 {
		errs = append(errs, fmt.Errorf("the member stall limit must be positive, got %s", o.Stall))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("the member request timeout must be positive, got %s", o.RequestTimeout))
	}
	if o.MinBackoff <= 0 || o.MaxBackoff < o.MinBackoff {
		errs = append(errs, fmt.Errorf("the member backoff must be positive and its maximum at least its minimum, got %s and %s", o.MinBackoff, o.MaxBackoff))
	}
	return errors.Join(errs...)
}

// Breaker isolates the callers of one member from that member hanging. A
// hung API server (a stopped process, a stuck proxy) accepts connections
// and requests and never answers: without a breaker every worker that
// writes to it waits, and with them every other member those workers
// serve. The breaker watches the requests in flight. When some have
// waited Stall without any answer in that time, it cancels them and opens:
// requests fail at once with ErrNotAnswering, the cluster's health
// controller is told (it reports the cluster Offline), and after a backoff
// one request is let through to test the member. Any HTTP answer closes
// the breaker. Quick failures (refused, reset) pass through: they cost no
// one a wait.
type Breaker struct {
	cluster string
	opts    BreakerOptions
	onTrip  func(cluster string)

	mu         sync.Mutex
	inflight   map[*call]struct{}
	lastAnswer time.Time
	watchdog   *time.Timer
	open       bool
	retryAt    time.Time
	backoff    time.Duration
	testing    bool // a request testing the member is in flight
}

// call is one request in flight.
type call struct {
	start  time.Time
	cancel context.CancelCauseFunc
	test   bool
}

func newBreaker(cluster string, opts BreakerOptions, onTrip func(string)) *Breaker {
	return &Breaker{cluster: cluster, opts: opts, onTrip: onTrip, inflight: map[*call]struct{}{}, lastAnswer: time.Now()}
}

// notAnswering is the error of a request refused or cancelled by an open
// breaker. Its text is stable, so conditions built from it do not change
// from one attempt to the next.
func (b *Breaker) notAnswering() error {
	return fmt.Errorf("cluster %s: %w: requests got no answer for %s; requests to it are paused and tried again with a backoff of up to %s",
		b.cluster, ErrNotAnswering, b.opts.Stall, b.opts.MaxBackoff)
}

// Err is the error requests to the member fail with now, or nil when they
// are let through (the breaker is closed, or due to test the member).
func (b *Breaker) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open && (b.testing || time.Now().Before(b.retryAt)) {
		return b.notAnswering()
	}
	return nil
}

// Open returns the error of an open breaker, one that found the member
// not answering and has not seen an answer since (even while a request is
// let through to test it), and nil when it is closed.
func (b *Breaker) Open() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return nil
	}
	return b.notAnswering()
}

// probeKey marks the context of a health probe.
type probeKey struct{}

// Probing returns ctx marked as a health probe's: its requests pass an
// open breaker, so that a probe tests the member itself rather than the
// breaker's opinion of it; an answer closes the breaker.
func Probing(ctx context.Context) context.Context {
	return context.WithValue(ctx, probeKey{}, true)
}

// begin registers a request, or refuses it with the breaker open.
func (b *Breaker) begin(ctx context.Context, cancel context.CancelCauseFunc) (*call, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	c := &call{start: now, cancel: cancel}
	if b.open && ctx.Value(probeKey{}) == nil {
		if b.testing || now.Before(b.retryAt) {
			return nil, b.notAnswering()
		}
		c.test, b.testing = true, true
	}
	b.inflight[c] = struct{}{}
	if b.watchdog == nil {
		b.watchdog = time.AfterFunc(b.opts.Stall, b.check)
	}
	return c, nil
}

// end records how a request ended: answered when the member sent an HTTP
// answer.
func (b *Breaker) end(c *call, answered bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.inflight, c)
	if c.test {
		b.testing = false
	}
	if answered {
		b.lastAnswer = time.Now()
		b.open, b.backoff = false, 0
	}
	// A test that ended otherwise (refused, or its caller gave up) proved
	// nothing: the next request tests again. One cut by the watchdog
	// re-opened the breaker with a longer backoff (trip).
}

// check runs Stall after the oldest request began: it trips the breaker
// when requests have waited Stall with no answer in that time, and
// otherwise looks again when that could next be so.
func (b *Breaker) check() {
	b.mu.Lock()
	b.watchdog = nil
	if len(b.inflight) == 0 {
		b.mu.Unlock()
		return
	}
	now := time.Now()
	oldest := now
	for c := range b.inflight {
		if c.start.Before(oldest) {
			oldest = c.start
		}
	}
	due := oldest.Add(b.opts.Stall)
	if quiet := b.lastAnswer.Add(b.opts.Stall); quiet.After(due) {
		due = quiet
	}
	if now.Before(due) {
		b.watchdog = time.AfterFunc(due.Sub(now), b.check)
		b.mu.Unlock()
		return
	}
	b.trip(now)
	b.mu.Unlock()
	if b.onTrip != nil {
		b.onTrip(b.cluster)
	}
}

// trip opens the breaker and cancels every request in flight. Called with
// mu held.
func (b *Breaker) trip(now time.Time) {
	b.backoff = min(max(2*b.backoff, b.opts.MinBackoff), b.opts.MaxBackoff)
	b.open, b.retryAt = true, now.Add(b.backoff)
	cause := b.notAnswering()
	for c := range b.inflight {
		c.cancel(cause)
	}
}

// wrap returns rt with the breaker in front of it.
func (b *Breaker) wrap(rt http.RoundTripper) http.RoundTripper {
	return &breakerTransport{breaker: b, next: rt}
}

// breakerTransport passes each request through its member's breaker.
type breakerTransport struct {
	breaker *Breaker
	next    http.RoundTripper
}

// RoundTrip sends req unless the breaker is open, bounds it by the request
// timeout unless it is a watch, and lets the breaker cancel it while it
// waits for an answer.
func (t *breakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	if !isWatch(req) {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, t.breaker.opts.RequestTimeout)
		inner := cancel
		cancel = func(cause error) { inner(cause); stop() }
	}
	c, err := t.breaker.begin(req.Context(), cancel)
	if err != nil {
		cancel(err)
		return nil, err
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	t.breaker.end(c, err == nil)
	if err != nil {
		cancel(nil)
		if errors.Is(context.Cause(ctx), ErrNotAnswering) {
			return nil, fmt.Errorf("%w (%w)", context.Cause(ctx), err)
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

// isWatch tells a long-running watch, which has no timeout, from a request.
func isWatch(req *http.Request) bool {
	return req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1"
}

// cancelOnClose releases a request's context once its body is read.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
	once   sync.Once
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.cancel)
	return err
}
