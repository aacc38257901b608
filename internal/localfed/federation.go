package localfed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Federation is a running host cluster and its members.
type Federation struct {
	// Host is the cluster the Fedwarden control plane runs against.
	Host *Cluster
	// Members are the member clusters, in the order they were named.
	Members []*Cluster
	// Dir holds a directory per cluster, and etcd's.
	Dir string

	etcd      *etcdServer
	env       *env
	grace     time.Duration
	removeDir bool

	// added are the members started by AddMember, stopped with the rest.
	addMu    sync.Mutex
	added    []*Cluster
	reserved map[string]bool // names of the added members, guarded by addMu

	stopOnce sync.Once
	stopErr  error
	stopping bool // guarded by addMu
}

// env is what every process of a federation shares.
type env struct {
	bins         binaries
	controllers  []string // of kube-controller-manager; none: it does not run
	logs         *logSink
	etcdURL      string
	startTimeout time.Duration
	pickPort     func() (int, error)
	noCRDs       bool      // WithoutCRDs
	lean         leanTrims // of the members' kube-apiservers
	// resume: the data directory holds a federation started before.
	resume bool
}

// Start starts one etcd, a host kube-apiserver and the member kube-apiservers,
// waits until all of them are ready, installs Fedwarden's CRDs into the host
// and waits until they are Established and listed by discovery, then
// installs the admission policies shipped with them (config/admission) and
// waits until the host enforces them (neither with WithoutCRDs). If
// anything fails, Start stops whatever it had started.
func Start(ctx context.Context, opts ...Option) (*Federation, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("starting a local federation: %w", err)
	}
	bins, err := findBinaries(o.binDir, len(o.controllers) > 0)
	if err != nil {
		return nil, fmt.Errorf("starting a local federation: %w", err)
	}
	names := append([]string{HostName}, o.memberNames...)
	dir, temporary, resume, err := prepareDir(o.dataDir, names)
	if err != nil {
		return nil, fmt.Errorf("starting a local federation: %w", err)
	}
	f := &Federation{Dir: dir, grace: o.stopGracePeriod, removeDir: temporary}
	e := &env{bins: bins, controllers: o.controllers, logs: &logSink{shared: o.logOutput}, startTimeout: o.startTimeout, pickPort: o.pickPort, noCRDs: o.noCRDs, lean: o.lean, resume: resume}
	f.env = e
	if err := f.start(ctx, e, o.memberNames); err != nil {
		return nil, errors.Join(fmt.Errorf("starting a local federation: %w", err), f.Stop())
	}
	if err := writeMarker(dir, names); err != nil {
		return nil, errors.Join(fmt.Errorf("starting a local federation: %w", err), f.Stop())
	}
	return f, nil
}

// markerFile, in a data directory, names the clusters of the federation
// whose data it holds, so that Start can start it again.
const markerFile = "localfed.json"

type marker struct {
	Clusters []string `json:"clusters"`
}

func writeMarker(dir string, names []string) error {
	data, err := json.Marshal(marker{Clusters: names})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", markerFile, err)
	}
	if err := os.WriteFile(filepath.Join(dir, markerFile), data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", markerFile, err)
	}
	return nil
}

// resumable tells whether dir holds the data of a federation of the
// clusters names, started before.
func resumable(dir string, names []string) (bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, markerFile))
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", markerFile, err)
	}
	var m marker
	if err := json.Unmarshal(data, &m); err != nil {
		return false, fmt.Errorf("reading %s: %w", markerFile, err)
	}
	if !slices.Equal(m.Clusters, names) {
		return false, fmt.Errorf("data directory %s holds a federation of clusters %v, not %v", dir, m.Clusters, names)
	}
	return true, nil
}

// prepareDir returns the data directory, creating a temporary one when dir
// is empty; a given directory must be empty, or hold the data of the same
// clusters started before (resume).
func prepareDir(dir string, names []string) (path string, temporary, resume bool, err error) {
	if dir == "" {
		dir, err = os.MkdirTemp("", "localfed-")
		if err != nil {
			return "", false, false, fmt.Errorf("creating data directory: %w", err)
		}
		return dir, true, false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, false, fmt.Errorf("creating data directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, false, fmt.Errorf("resolving data directory: %w", err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "", false, false, fmt.Errorf("reading data directory: %w", err)
	}
	if len(entries) == 0 {
		return abs, false, false, nil
	}
	resume, err = resumable(abs, names)
	if err != nil {
		return "", false, false, err
	}
	if !resume {
		return "", false, false, fmt.Errorf("data directory %s is not empty, and holds no federation started before", abs)
	}
	return abs, false, true, nil
}

func (f *Federation) start(ctx context.Context, e *env, members []string) error {
	var err error
	if f.etcd, err = startEtcd(ctx, e, filepath.Join(f.Dir, "etcd")); err != nil {
		return err
	}
	e.etcdURL = f.etcd.url
	clusters, err := startClusters(ctx, e, f.Dir, append([]string{HostName}, members...))
	f.Host, f.Members = clusters[0], clusters[1:]
	if err != nil {
		return err
	}
	if e.noCRDs {
		return nil
	}
	if err := installCRDs(ctx, f.Host.Config, e.startTimeout); err != nil {
		return err
	}
	return installAdmissionPolicies(ctx, f.Host.Config, e.startTimeout)
}

// startClusters starts a cluster per name, all at once. The clusters that
// could be created are returned even on error, so that they can be stopped.
func startClusters(ctx context.Context, e *env, root string, names []string) ([]*Cluster, error) {
	ctx, cancel := context.WithCancel(ctx) // the first failure stops the others waiting
	defer cancel()
	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			if clusters[i], errs[i] = startCluster(ctx, e, root, name, e.resume); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return clusters, errors.Join(errs...)
}

// AddMember starts one more member kube-apiserver, called name, on the
// federation's etcd, and waits until it is ready. It is a cluster of its
// own (its own data, certificates and kube-system namespace), for a test
// that must not share a member with others; it is not in Members, and it
// is stopped with the federation. A stopped federation refuses.
func (f *Federation) AddMember(ctx context.Context, name string) (*Cluster, error) {
	if err := f.reserve(name); err != nil {
		return nil, fmt.Errorf("adding member %s: %w", name, err)
	}
	c, err := startCluster(ctx, f.env, f.Dir, name, false)
	f.addMu.Lock()
	defer f.addMu.Unlock()
	if c != nil {
		if f.stopping { // stopped while this one started
			return nil, errors.Join(fmt.Errorf("adding member %s: the federation was stopped meanwhile", name), c.shutdown(f.grace))
		}
		f.added = append(f.added, c) // stopped with the federation, even if it failed to start
	}
	if err != nil {
		return nil, fmt.Errorf("adding member %s: %w", name, err)
	}
	return c, nil
}

// RemoveMember stops a member started by AddMember for good: its
// kube-apiserver and kube-controller-manager. Its data stays in etcd until
// the federation is stopped. Only added members can be removed.
func (f *Federation) RemoveMember(c *Cluster) error {
	f.addMu.Lock()
	i := slices.Index(f.added, c)
	if i >= 0 {
		f.added = slices.Delete(f.added, i, i+1)
	}
	f.addMu.Unlock()
	if i < 0 {
		return fmt.Errorf("removing member %s: it was not added with AddMember, or was removed before", c.Name)
	}
	return c.shutdown(f.grace)
}

// reserve claims name for a member about to be added: no cluster has it.
func (f *Federation) reserve(name string) error {
	f.addMu.Lock()
	defer f.addMu.Unlock()
	switch {
	case f.stopping:
		return errors.New("the federation is stopped")
	case name == HostName || f.Member(name) != nil || f.reserved[name]:
		return errors.New("the federation has a cluster of that name")
	}
	if f.reserved == nil {
		f.reserved = map[string]bool{}
	}
	f.reserved[name] = true
	return nil
}

// Member returns the member called name, or nil.
func (f *Federation) Member(name string) *Cluster {
	for _, m := range f.Members {
		if m != nil && m.Name == name {
			return m
		}
	}
	return nil
}

// Clusters returns the host, then the members.
func (f *Federation) Clusters() []*Cluster {
	all := make([]*Cluster, 0, 1+len(f.Members))
	for _, c := range append([]*Cluster{f.Host}, f.Members...) {
		if c != nil {
			all = append(all, c)
		}
	}
	return all
}

// Stop stops every kube-apiserver, then etcd, each with SIGTERM and, after
// the grace period, SIGKILL; it waits until all have exited and removes the
// data directory unless it was given with WithDataDir. Calling it again
// returns the first result.
func (f *Federation) Stop() error {
	f.stopOnce.Do(func() { f.stopErr = f.stop() })
	return f.stopErr
}

func (f *Federation) stop() error {
	f.addMu.Lock()
	f.stopping = true
	clusters := append(f.Clusters(), f.added...)
	f.addMu.Unlock()
	errs := make([]error, len(clusters), len(clusters)+2)
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Go(func() { errs[i] = c.shutdown(f.grace) })
	}
	wg.Wait()
	if f.etcd != nil {
		errs = append(errs, f.etcd.proc.terminate(f.grace))
	}
	if f.removeDir {
		if err := os.RemoveAll(f.Dir); err != nil {
			errs = append(errs, fmt.Errorf("removing data directory: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping the local federation: %w", err)
	}
	return nil
}
