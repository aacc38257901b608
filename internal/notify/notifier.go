package notify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Options configure the notifier: the controller-manager's --notify-* flags.
type Options struct {
	// Webhooks are the sinks, as ParseSinkSpec reads them.
	Webhooks []string
	// WebhooksFile is a file of more sinks, one a line, so that URLs that
	// carry a token can come from a Secret rather than the command line.
	WebhooksFile string
	// ConsoleURL is the base of the console link in each event; empty:
	// no link.
	ConsoleURL string
	// CAFile is a PEM file of CA certificates trusted besides the
	// system's, to verify sinks served over HTTPS.
	CAFile string
	// QueueSize is how many events each sink's queue holds.
	QueueSize int
	// Timeout bounds one POST.
	Timeout time.Duration
	// Backoff spaces the attempts of one event; Steps is their number.
	Backoff wait.Backoff
}

// DefaultOptions are the defaults of the flags.
func DefaultOptions() Options {
	return Options{
		QueueSize: 1000,
		Timeout:   10 * time.Second,
		Backoff:   wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 5},
	}
}

// maxAttempts bounds --notify-attempts: the waits double from 1s, so the
// tenth attempt comes about 8.5 minutes after the first. (wait.Backoff's
// Cap would end the attempts when reached, not keep the waits at it.)
const maxAttempts = 10

// AddFlags adds the --notify-* flags and --console-url to f.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&o.Webhooks, "notify-webhook", o.Webhooks, "POST each drift transition (detected, healed, alerted, resolved) as a CloudEvent (structured JSON) to this http(s) URL; "+
		"repeatable, one sink each. Filter terms may follow the URL, separated by spaces: namespace=, kind=, cluster=, state=, remediation=, each with values separated by commas, "+
		"e.g. 'https://hooks.example.com/x kind=Deployment state=ModifiedOutOfBand,Missing remediation=Alert'")
	f.StringVar(&o.WebhooksFile, "notify-webhooks-file", o.WebhooksFile, "file of more webhooks, one a line as --notify-webhook takes them (blank lines and lines starting with # are skipped): "+
		"URLs that carry a token belong in a Secret mounted as a file, not in the process's arguments; read at start")
	f.StringVar(&o.ConsoleURL, "console-url", o.ConsoleURL, "base URL of the Fedwarden console: each notification links to the resource's page under it; empty: no link")
	f.StringVar(&o.CAFile, "notify-ca-file", o.CAFile, "PEM file of CA certificates trusted, besides the system's, to verify HTTPS webhooks")
	f.IntVar(&o.QueueSize, "notify-queue-size", o.QueueSize, "notifications each webhook's queue holds; when it is full, new ones are dropped and counted in fedwarden_notifications_dropped_total")
	f.DurationVar(&o.Timeout, "notify-timeout", o.Timeout, "timeout of one POST to a webhook")
	f.IntVar(&o.Backoff.Steps, "notify-attempts", o.Backoff.Steps, "attempts to deliver one notification, at most 10: a 5xx, 408, 429 or network error is retried after 1s, 2s, 4s…")
}

// Notifier sends drift transitions to the webhook sinks. Start runs their
// workers; Notify may be called before, and queues.
type Notifier struct {
	sinks   []*sink
	console *url.URL
	now     func() time.Time
	log     logr.Logger
}

// New returns the notifier of o, or nil when o names no webhook.
func New(o Options, log logr.Logger) (*Notifier, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	webhooks, _ := o.webhooks() // read by Validate
	if len(webhooks) == 0 {
		return nil, nil
	}
	n := &Notifier{now: time.Now, log: log}
	if o.ConsoleURL != "" {
		n.console, _ = url.Parse(o.ConsoleURL) // checked by Validate
	}
	client, err := httpClient(o)
	if err != nil {
		return nil, err
	}
	for i, w := range webhooks {
		spec, _ := ParseSinkSpec(w) // checked by Validate
		n.sinks = append(n.sinks, &sink{
			name: Redact(spec.URL), url: spec.URL, filter: spec.Filter,
			queue: make(chan delivery, o.QueueSize), client: client, backoff: o.Backoff,
			counters: countersFor(strconv.Itoa(i), spec.URL.Host),
		})
	}
	return n, nil
}

// Validate checks the flags; its errors never quote a webhook's URL.
func (o Options) Validate() error {
	if o.QueueSize < 1 || o.Timeout <= 0 || o.Backoff.Steps < 1 || o.Backoff.Steps > maxAttempts {
		return fmt.Errorf("--notify-queue-size must be at least 1, --notify-attempts from 1 to %d, --notify-timeout positive", maxAttempts)
	}
	if o.ConsoleURL != "" {
		if u, err := url.Parse(o.ConsoleURL); err != nil || !u.IsAbs() {
			return errors.New("--console-url must be an absolute URL")
		}
	}
	for i, w := range o.Webhooks {
		if _, err := ParseSinkSpec(w); err != nil {
			return fmt.Errorf("--notify-webhook #%d: %w", i+1, err)
		}
	}
	_, err := o.webhooks()
	return err
}

// webhooks are the sinks of --notify-webhook and of --notify-webhooks-file.
// Its errors name the file and line, never a URL.
func (o Options) webhooks() ([]string, error) {
	if o.WebhooksFile == "" {
		return o.Webhooks, nil
	}
	data, err := os.ReadFile(o.WebhooksFile)
	if err != nil {
		return nil, fmt.Errorf("--notify-webhooks-file: %w", err)
	}
	webhooks := slices.Clone(o.Webhooks)
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := ParseSinkSpec(line); err != nil {
			return nil, fmt.Errorf("--notify-webhooks-file %s line %d: %w", o.WebhooksFile, i+1, err)
		}
		webhooks = append(webhooks, line)
	}
	return webhooks, nil
}

// httpClient verifies servers against the system's roots and o.CAFile's,
// and follows no redirect (a POST is not replayed elsewhere).
func httpClient(o Options) (*http.Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("reading the system's CA certificates: %w", err)
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--notify-ca-file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--notify-ca-file %s holds no PEM certificate", o.CAFile)
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport:     transport,
		Timeout:       o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// Notify queues t for every sink whose filter it passes. It never blocks:
// a sink whose queue is full drops it (and counts it).
func (n *Notifier) Notify(t Transition) {
	ev := NewEvent(t, n.now(), n.console)
	var body []byte
	for _, s := range n.sinks {
		if !s.filter.Matches(t) {
			continue
		}
		if body == nil {
			var err error
			if body, err = ev.Encode(); err != nil {
				n.log.Error(err, "Drift notification not sent")
				return
			}
		}
		if !s.enqueue(delivery{id: ev.ID, body: body}) {
			n.log.V(1).Info("Drift notification dropped: the sink's queue is full", "sink", s.name, "id", ev.ID)
		}
	}
}

var (
	_ manager.Runnable               = (*Notifier)(nil)
	_ manager.LeaderElectionRunnable = (*Notifier)(nil)
)

// Start runs one worker per sink until ctx ends.
func (n *Notifier) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, s := range n.sinks {
		wg.Go(func() { s.run(ctx, n.log) })
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection is false: the workers only empty the queues, which
// only the leader's propagation controllers fill.
func (n *Notifier) NeedLeaderElection() bool {
	return false
}
