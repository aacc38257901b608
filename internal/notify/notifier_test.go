package notify

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fedwarden/fedwarden/test/poll"
)

// waitTimeout bounds every wait for a state the test expects; the tests
// poll, and never assert how long something took.
const waitTimeout = 30 * time.Second

// receiver is a webhook on 127.0.0.1 that answers with the codes given,
// in turn (the last one for ever), and keeps what it was sent.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	codes    []int
	requests []received
	base     [3]float64 // the counters of sink 0 at its address, at start
}

type received struct {
	contentType string
	path, query string
	user        string
	body        []byte
}

func newReceiver(t *testing.T, codes ...int) *receiver {
	t.Helper()
	r := &receiver{codes: codes}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		user, _, _ := req.BasicAuth()
		r.mu.Lock()
		r.requests = append(r.requests, received{contentType: req.Header.Get("Content-Type"), path: req.URL.Path, query: req.URL.RawQuery, user: user, body: body})
		code := http.StatusOK
		if n := len(r.requests); len(r.codes) > 0 {
			code = r.codes[min(n, len(r.codes))-1]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	r.base = rawCounts(r.Listener.Addr().String())
	return r
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}

// webhook is the receiver's URL with credentials in every place a URL can
// hold them, which no log or metric may show.
func (r *receiver) webhook(filter ...string) string {
	u, _ := url.Parse(r.URL)
	u.User = url.UserPassword("alice", "s3cret")
	u.Path, u.RawQuery = "/hooks/T0KEN", "key=s3cret"
	return strings.Join(append([]string{u.String()}, filter...), " ")
}

// fastOptions retry at once, so that the tests do not wait.
func fastOptions(webhooks ...string) Options {
	o := DefaultOptions()
	o.Webhooks = webhooks
	o.Timeout = 5 * time.Second
	o.Backoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 3}
	return o
}

// logBuffer is a logger that keeps what is logged.
type logBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.sb.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

// start runs n until the test ends.
func start(t *testing.T, n *Notifier) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func newNotifier(t *testing.T, o Options, log logr.Logger) *Notifier {
	t.Helper()
	n, err := New(o, log)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// value reads a counter.
func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// rawCounts reads the counters of sink 0 at host: sent, failed, dropped.
func rawCounts(host string) [3]float64 {
	return [3]float64{
		value(notificationsSent.WithLabelValues("0", host)),
		value(notificationsFailed.WithLabelValues("0", host)),
		value(notificationsDropped.WithLabelValues("0", host)),
	}
}

// counts reads the counters of the receiver as sink 0, since it started
// (a port, and so the series, may have served an earlier test).
func counts(r *receiver) (sent, failed, dropped float64) {
	now := rawCounts(r.Listener.Addr().String())
	return now[0] - r.base[0], now[1] - r.base[1], now[2] - r.base[2]
}

// A transition reaches each sink whose filter it passes, as a structured
// CloudEvent, at the URL as configured (credentials included).
func TestNotifyDelivers(t *testing.T) {
	t.Parallel()
	all, alertOnly, otherNamespace := newReceiver(t), newReceiver(t), newReceiver(t)
	n := newNotifier(t, fastOptions(all.webhook(), alertOnly.webhook("remediation=Alert", "kind=Deployment"), otherNamespace.webhook("namespace=pay")), logr.Discard())
	start(t, n)
	n.Notify(sampleTransition())
	poll.Eventually(t, waitTimeout, "both matching sinks to receive the event", poll.True(func() bool {
		return len(all.received()) == 1 && len(alertOnly.received()) == 1
	}))
	got := all.received()[0]
	if got.contentType != ContentType || got.path != "/hooks/T0KEN" || got.query != "key=s3cret" || got.user != "alice" {
		t.Errorf("request %+v", got)
	}
	var ev CloudEvent
	if err := json.Unmarshal(got.body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != Alerted || ev.Data.Cluster != "member-1" || ev.Data.State != "ModifiedOutOfBand" ||
		ev.Data.Paths[0] != "/spec/replicas" || ev.Data.Managers[0] != "kubectl-edit" || ev.Data.TemplateVersion != "3" {
		t.Errorf("event %+v", ev)
	}
	poll.Eventually(t, waitTimeout, "the sent counter", poll.True(func() bool { s, _, _ := counts(all); return s == 1 }))
	if len(otherNamespace.received()) != 0 {
		t.Errorf("the sink filtered on namespace pay received %d events", len(otherNamespace.received()))
	}
}

// A 5xx is retried; a sink that fails every attempt, or refuses the event
// with a 4xx (not retried), counts a failure, logged without the URL's
// credentials.
func TestNotifyRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                   string
		codes                  []int
		wantRequests           int
		wantSent, wantFailed   float64
		wantLogged, notWantLog string
	}{
		{name: "a 500, then accepted", codes: []int{500, 204}, wantRequests: 2, wantSent: 1},
		{name: "429 is retried", codes: []int{429, 200}, wantRequests: 2, wantSent: 1},
		{name: "500 at every attempt", codes: []int{500}, wantRequests: 3, wantFailed: 1, wantLogged: "answered 500"},
		{name: "400 is not retried", codes: []int{400}, wantRequests: 1, wantFailed: 1, wantLogged: "answered 400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newReceiver(t, tt.codes...)
			var log logBuffer
			n := newNotifier(t, fastOptions(r.webhook()), log.logger())
			start(t, n)
			n.Notify(sampleTransition())
			poll.Eventually(t, waitTimeout, "the event to be settled", poll.True(func() bool {
				s, f, _ := counts(r)
				return s+f == 1 && strings.Contains(log.String(), tt.wantLogged)
			}))
			sent, failed, _ := counts(r)
			if got := len(r.received()); got != tt.wantRequests || sent != tt.wantSent || failed != tt.wantFailed {
				t.Errorf("%d requests, %v sent, %v failed; want %d, %v, %v", got, sent, failed, tt.wantRequests, tt.wantSent, tt.wantFailed)
			}
			logged := log.String()
			if !strings.Contains(logged, tt.wantLogged) {
				t.Errorf("log %q, want %q in it", logged, tt.wantLogged)
			}
			assertNoCredentials(t, logged)
		})
	}
}

func assertNoCredentials(t *testing.T, s string) {
	t.Helper()
	for _, secret := range []string{"s3cret", "T0KEN", "alice"} {
		if strings.Contains(s, secret) {
			t.Errorf("%q shows the webhook's credential %q", s, secret)
		}
	}
}

// A sink that cannot be reached fails with an error that names its host
// only.
func TestNotifyUnreachableSinkHidesCredentials(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	webhook := r.webhook()
	r.Close() // nothing listens at that loopback port any more
	var log logBuffer
	n := newNotifier(t, fastOptions(webhook), log.logger())
	start(t, n)
	n.Notify(sampleTransition())
	poll.Eventually(t, waitTimeout, "the failure to be counted and logged", poll.True(func() bool {
		_, f, _ := counts(r)
		return f == 1 && strings.Contains(log.String(), "Drift notification not delivered")
	}))
	assertNoCredentials(t, log.String())
}

// When a sink's queue is full, further events are dropped and counted;
// those queued are still delivered.
func TestNotifyDropsWhenQueueFull(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	o := fastOptions(r.webhook())
	o.QueueSize = 2
	n := newNotifier(t, o, logr.Discard())
	for range 5 {
		n.Notify(sampleTransition()) // no worker yet: the queue fills
	}
	if _, _, dropped := counts(r); dropped != 3 {
		t.Errorf("%v dropped, want 3", dropped)
	}
	start(t, n)
	poll.Eventually(t, waitTimeout, "the queued events to be delivered", poll.True(func() bool { s, _, _ := counts(r); return s == 2 }))
	if got := len(r.received()); got != 2 {
		t.Errorf("%d events received, want 2", got)
	}
}

// A sink that accepts connections and never answers holds its worker, and
// never the caller of Notify: every call returns, with the queue full.
func TestNotifyNeverBlocksOnADeadSink(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	dead := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(func() { close(release); dead.Close() })
	before := rawCounts(dead.Listener.Addr().String())
	o := fastOptions(dead.URL)
	o.QueueSize, o.Timeout = 10, time.Hour
	n := newNotifier(t, o, logr.Discard())
	start(t, n)
	const calls = 1000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range calls {
			n.Notify(sampleTransition())
		}
	}()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Notify blocked on a sink that does not answer")
	}
	// One in flight at most, QueueSize queued: the rest dropped.
	if dropped := rawCounts(dead.Listener.Addr().String())[2] - before[2]; dropped < calls-float64(o.QueueSize)-1 {
		t.Errorf("%v dropped of %d, want at least %d", dropped, calls, calls-o.QueueSize-1)
	}
}

// HTTPS sinks are verified: against the system's roots, which do not
// hold a test server's certificate, and --notify-ca-file's.
func TestNotifyVerifiesTLS(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	received := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		received++
	}))
	srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	host := srv.Listener.Addr().String()
	before := rawCounts(host)

	var log logBuffer
	n := newNotifier(t, fastOptions(srv.URL), log.logger())
	start(t, n)
	n.Notify(sampleTransition())
	poll.Eventually(t, waitTimeout, "the unverified sink to fail, for its certificate", poll.True(func() bool {
		return rawCounts(host)[1]-before[1] == 1 && strings.Contains(log.String(), "certificate")
	}))

	o := fastOptions(srv.URL)
	o.CAFile = caFile
	trusting := newNotifier(t, o, logr.Discard())
	start(t, trusting)
	trusting.Notify(sampleTransition())
	poll.Eventually(t, waitTimeout, "the sink to receive the event", poll.True(func() bool { mu.Lock(); defer mu.Unlock(); return received == 1 }))
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(*Options)
		wantErr string
	}{
		{"defaults with a webhook", func(*Options) {}, ""},
		{"queue of 0", func(o *Options) { o.QueueSize = 0 }, "--notify-queue-size"},
		{"no attempt", func(o *Options) { o.Backoff.Steps = 0 }, "--notify-attempts from 1 to 10"},
		{"too many attempts", func(o *Options) { o.Backoff.Steps = 11 }, "--notify-attempts from 1 to 10"},
		{"relative console", func(o *Options) { o.ConsoleURL = "console" }, "--console-url must be an absolute URL"},
		{"bad webhook", func(o *Options) { o.Webhooks = append(o.Webhooks, "https://127.0.0.1:9/x nope") }, "--notify-webhook #2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions()
			o.Webhooks = []string{"https://127.0.0.1:9/x"}
			tt.change(&o)
			err := o.Validate()
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// Sinks may come from a file, as a mounted Secret holds them: one a line,
// beside those of --notify-webhook; a bad line is an error that names the
// file and line, never the URL.
func TestWebhooksFile(t *testing.T) {
	t.Parallel()
	fromFlag, fromFile := newReceiver(t), newReceiver(t)
	path := filepath.Join(t.TempDir(), "webhooks")
	if err := os.WriteFile(path, []byte("# the team's channel\n\n  "+fromFile.webhook("kind=Deployment")+"  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(fromFlag.webhook())
	o.WebhooksFile = path
	n := newNotifier(t, o, logr.Discard())
	start(t, n)
	n.Notify(sampleTransition())
	poll.Eventually(t, waitTimeout, "both sinks to receive the event", poll.True(func() bool {
		return len(fromFlag.received()) == 1 && len(fromFile.received()) == 1
	}))

	bad := filepath.Join(t.TempDir(), "webhooks")
	if err := os.WriteFile(bad, []byte(fromFile.webhook()+"\n"+fromFile.webhook("colour=red")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.WebhooksFile = bad
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--notify-webhooks-file "+bad+" line 2") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "T0KEN") {
		t.Errorf("Validate() with a bad line = %v; want the file and line 2, without credentials", err)
	}
	o.WebhooksFile = filepath.Join(t.TempDir(), "missing")
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--notify-webhooks-file") {
		t.Errorf("Validate() with a missing file = %v", err)
	}
}
