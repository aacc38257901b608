package clustercache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/egress"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
)

// ErrClusterNotConnected is returned for a cluster the cache has no clients
// for: not joined, settings malformed, a Pull cluster, or not visited yet.
var ErrClusterNotConnected = errors.New("cluster not connected")

// Member is the set of clients of one member cluster. It never changes once
// built; a change of settings builds a new Member.
type Member struct {
	// Name is the FederatedCluster's name.
	Name string
	// Config authenticates with the member's token and verifies its CA.
	Config *rest.Config
	// Kube is a typed clientset.
	Kube kubernetes.Interface
	// Dynamic reaches any resource the member serves.
	Dynamic dynamic.Interface
	// Informers is shared by the controllers that watch this member; start
	// it with Context().Done().
	Informers dynamicinformer.DynamicSharedInformerFactory
	// Managed is like Informers, but sees only the objects Fedwarden
	// manages (label kubefed.io/managed=true).
	Managed dynamicinformer.DynamicSharedInformerFactory
	// Breaker is in front of every request of these clients, and of those
	// built from Config: it fails them at once while the member does not
	// answer.
	Breaker *Breaker

	key    string
	ctx    context.Context
	cancel context.CancelFunc
}

// Context ends when the member's clients are rebuilt or removed.
func (m *Member) Context() context.Context { return m.ctx }

// Options tune the clients the cache builds.
type Options struct {
	// QPS and Burst are the client-side rate limits towards each member.
	QPS   float32
	Burst int
	// UserAgent is sent with every request to a member.
	UserAgent string
	// ResyncPeriod of the informer factories; 0 disables periodic resyncs.
	ResyncPeriod time.Duration
	// Networks are the only networks members may be reached at; empty
	// allows any address (see package egress).
	Networks egress.Networks
	// Log receives the refusals of connections outside Networks.
	Log logr.Logger
	// Breaker tunes each member's breaker; the zero value means
	// DefaultBreakerOptions.
	Breaker BreakerOptions
}

// Cache holds the clients of every connected member. It is safe for
// concurrent use.
type Cache struct {
	opts    Options
	mu      sync.RWMutex
	members map[string]*Member
	onTrip  func(cluster string)
}

// OnNotAnswering registers f, called with a member's name each time its
// breaker finds it not answering (the cluster's health controller probes
// it then). Register it before members are built.
func (c *Cache) OnNotAnswering(f func(cluster string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onTrip = f
}

// tripped calls the registered handler, if any.
func (c *Cache) tripped(cluster string) {
	c.mu.RLock()
	f := c.onTrip
	c.mu.RUnlock()
	if f != nil {
		f(cluster)
	}
}

// New returns an empty cache.
func New(opts Options) *Cache {
	return &Cache{opts: opts, members: map[string]*Member{}}
}

// Get returns the clients of the named cluster, or an error wrapping
// ErrClusterNotConnected.
func (c *Cache) Get(name string) (*Member, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if m, ok := c.members[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("cluster %s: %w", name, ErrClusterNotConnected)
}

// Names returns the names of the connected clusters, sorted.
func (c *Cache) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := make([]string, 0, len(c.members))
	for name := range c.members {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Set returns the clients of the named cluster for conn, building them when
// the cluster is new or its connection changed; rebuilt reports whether it
// did. Replaced clients are torn down.
func (c *Cache) Set(name string, conn Connection) (m *Member, rebuilt bool, err error) {
	key := conn.key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.members[name]; ok && old.key == key {
		return old, false, nil
	}
	m, err = c.build(name, conn, key)
	if err != nil {
		return nil, false, err
	}
	if old, ok := c.members[name]; ok {
		old.cancel()
	}
	c.members[name] = m
	return m, true, nil
}

// Remove tears down the clients of the named cluster, if any.
func (c *Cache) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.members[name]; ok {
		m.cancel()
		delete(c.members, name)
	}
}

func (c *Cache) build(name string, conn Connection, key string) (*Member, error) {
	cfg := &rest.Config{
		Host:            conn.Endpoint,
		BearerToken:     conn.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: conn.CABundle},
		QPS:             c.opts.QPS,
		Burst:           c.opts.Burst,
		UserAgent:       c.opts.UserAgent,
		Dial:            egress.NewDialer(c.opts.Networks, name, c.opts.Log).DialContext,
	}
	m, err := newMember(name, cfg, c.opts.ResyncPeriod, newBreaker(name, c.breakerOptions(), c.tripped))
	if err != nil {
		return nil, err
	}
	m.key = key
	return m, nil
}

// breakerOptions are the options of each member's breaker.
func (c *Cache) breakerOptions() BreakerOptions {
	if c.opts.Breaker == (BreakerOptions{}) {
		return DefaultBreakerOptions()
	}
	return c.opts.Breaker
}

// NewMember returns the clients of the cluster name from cfg, outside any
// cache: a Pull cluster's agent uses it for its own cluster. Its Context
// ends when ctx does.
func NewMember(ctx context.Context, name string, cfg *rest.Config) (*Member, error) {
	m, err := newMember(name, cfg, 0, newBreaker(name, DefaultBreakerOptions(), nil))
	if err != nil {
		return nil, err
	}
	go func() {
		<-ctx.Done()
		m.cancel()
	}()
	return m, nil
}

// newMember builds the member's clients over one HTTP client, so that they
// share connections (client-go does not share transports of configs with a
// Dial function by itself), all behind breaker.
func newMember(name string, cfg *rest.Config, resync time.Duration, breaker *Breaker) (*Member, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandlerWithContext = scrub.WarningLogger{} // a warning on a Secret may quote its values
	cfg.Wrap(breaker.wrap)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building clients of cluster %s: %w", name, err)
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building clients of cluster %s: %w", name, err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building clients of cluster %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Member{
		Name:      name,
		Config:    cfg,
		Kube:      kube,
		Dynamic:   dyn,
		Informers: dynamicinformer.NewDynamicSharedInformerFactory(dyn, resync),
		Managed: dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, resync, metav1.NamespaceAll, func(o *metav1.ListOptions) {
			o.LabelSelector = typesv1beta1.LabelManaged + "=true"
		}),
		Breaker: breaker,
		ctx:     ctx,
		cancel:  cancel,
	}, nil
}
