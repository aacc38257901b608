package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// maxResponseBytes is how much of a sink's answer is read (and dropped),
// so that the connection can be reused.
const maxResponseBytes = 4096

// delivery is one encoded event waiting in a sink's queue.
type delivery struct {
	id   string
	body []byte
}

// sink is one webhook: its queue and the worker that empties it. The queue
// is a buffered channel, the Go form of a bounded FIFO; controller-runtime's
// workqueues dedupe keys and never refuse one, which is not what a stream
// of events that may be dropped needs.
type sink struct {
	name    string // Redact(url): what logs and metrics show
	url     *url.URL
	filter  Filter
	queue   chan delivery
	client  *http.Client
	backoff wait.Backoff
	counters
}

// enqueue puts d in the queue, or drops and counts it when the queue is
// full; it never blocks.
func (s *sink) enqueue(d delivery) bool {
	select {
	case s.queue <- d:
		return true
	default:
		s.dropped.Inc()
		return false
	}
}

// run delivers the queued events one at a time until ctx ends.
func (s *sink) run(ctx context.Context, log logr.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-s.queue:
			s.deliver(ctx, log, d)
		}
	}
}

// deliver POSTs d, retrying with backoff while the failure may pass.
func (s *sink) deliver(ctx context.Context, log logr.Logger, d delivery) {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, s.backoff, func(ctx context.Context) (bool, error) {
		last = s.post(ctx, d.body)
		var status *statusError
		if errors.As(last, &status) && !status.retriable() {
			return false, last
		}
		return last == nil, nil
	})
	if err == nil {
		s.sent.Inc()
		return
	}
	if ctx.Err() != nil {
		return // stopping: the event is lost with the queue
	}
	s.failed.Inc()
	log.Error(last, "Drift notification not delivered", "sink", s.name, "id", d.id, "attempts", s.backoff.Steps)
}

// post sends one CloudEvent in structured mode.
func (s *sink) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url.String(), bytes.NewReader(body))
	if err != nil {
		return s.redacted(err)
	}
	req.Header.Set("Content-Type", ContentType)
	resp, err := s.client.Do(req)
	if err != nil {
		return s.redacted(err)
	}
	defer resp.Body.Close() //nolint:errcheck // read-only body
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &statusError{sink: s.name, code: resp.StatusCode}
	}
	return nil
}

// redacted replaces the URL in err, which may hold credentials, by the
// sink's name.
func (s *sink) redacted(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		uerr.URL = s.name
	}
	return err
}

// statusError is a sink's answer other than 2xx.
type statusError struct {
	sink string
	code int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s answered %d %s", e.sink, e.code, http.StatusText(e.code))
}

// retriable tells whether the answer may change: a 5xx, 408 or 429. Any
// other (a 4xx, a redirect, which is not followed) will not.
func (e *statusError) retriable() bool {
	return e.code >= 500 || e.code == http.StatusRequestTimeout || e.code == http.StatusTooManyRequests
}
