package localfed

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// HostName is the name of the host cluster.
const HostName = "host"

const (
	defaultStartTimeout    = 60 * time.Second
	defaultStopGracePeriod = 10 * time.Second
)

// Option configures Start.
type Option func(*options)

type options struct {
	members         int
	membersSet      bool
	memberNames     []string
	binDir          string
	dataDir         string
	logOutput       io.Writer
	startTimeout    time.Duration
	stopGracePeriod time.Duration
	controllers     []string
	noCRDs          bool
	lean            leanTrims // of the member kube-apiservers; WithLeanMembers
	// pickPort chooses each kube-apiserver's port (default freePort); tests
	// replace it to hand out a port that is taken.
	pickPort func() (int, error)
}

// WithMembers sets the number of member clusters (default 0).
func WithMembers(n int) Option {
	return func(o *options) { o.members, o.membersSet = n, true }
}

// WithMemberNames names the member clusters (default member-1..member-N).
// Without WithMembers, it also sets their number.
func WithMemberNames(names ...string) Option {
	return func(o *options) { o.memberNames = append([]string(nil), names...) }
}

// WithBinDir sets the directory holding the etcd, kube-apiserver and
// kube-controller-manager binaries (default: $FEDWARDEN_BIN_DIR, else bin/ at the root of the Fedwarden module).
func WithBinDir(dir string) Option {
	return func(o *options) { o.binDir = dir }
}

// WithDataDir sets the directory for certificates, kubeconfigs, logs and etcd
// data. It must be empty or absent, or hold the data of a federation of the
// same clusters that Start started there before: that federation is started
// again, with its objects, certificates and keys (on new ports; the
// kubeconfigs are rewritten). Stop keeps the directory. By default a fresh
// temporary directory is used and Stop removes it.
func WithDataDir(dir string) Option {
	return func(o *options) { o.dataDir = dir }
}

// WithLogOutput sends the output of every process to w, each line prefixed
// with the process name. By default each process writes to a file in its
// directory: <dir>/<cluster>/apiserver.log, <dir>/<cluster>/controller-manager.log
// and <dir>/etcd/etcd.log.
func WithLogOutput(w io.Writer) Option {
	return func(o *options) { o.logOutput = w }
}

// WithStartTimeout bounds how long each process may take to become ready,
// how long the CRDs may take to become Established, and the admission
// policies enforced (default 60s).
func WithStartTimeout(d time.Duration) Option {
	return func(o *options) { o.startTimeout = d }
}

// WithStopGracePeriod sets how long Federation.Stop waits after SIGTERM
// before it sends SIGKILL (default 10s).
func WithStopGracePeriod(d time.Duration) Option {
	return func(o *options) { o.stopGracePeriod = d }
}

// WithControllers sets the kube-controller-manager controllers each cluster
// runs (default DefaultControllers). A non-empty list must hold
// serviceaccount-controller: Start waits until it has created the default
// ServiceAccount to know that kube-controller-manager works. With none, no
// kube-controller-manager runs and its binary is not needed.
func WithControllers(names ...string) Option {
	return func(o *options) { o.controllers = slices.Clone(names) }
}

// WithoutCRDs starts the host without Fedwarden's CRDs and admission
// policies: a bare kube-apiserver, for a federation that brings its own
// definitions of the same API groups, such as KubeFed in bench/bulk.
func WithoutCRDs() Option {
	return func(o *options) { o.noCRDs = true }
}

// WithLeanMembers trims the member kube-apiservers (not the host's), for a
// bed of many members on one machine: each serves fewer API groups and runs
// its Go code on one core at a time (leanTrims). A lean member
// receives and reports what Fedwarden's benchmarks place (core and apps
// objects, with RBAC for its join) exactly as a full one does; it has no
// Jobs, CronJobs, HorizontalPodAutoscalers, PodDisruptionBudgets or
// events.k8s.io Events (core Events stay), so a test that places those
// needs full members. The savings, measured: bench/bulk/RESULTS.md, "One
// lean member against a full one".
func WithLeanMembers() Option {
	return func(o *options) { o.lean = leanTrims{apis: true, oneProc: true} }
}

func newOptions(opts []Option) (*options, error) {
	o := &options{startTimeout: defaultStartTimeout, stopGracePeriod: defaultStopGracePeriod, controllers: slices.Clone(DefaultControllers), pickPort: freePort}
	for _, opt := range opts {
		opt(o)
	}
	names, err := o.clusterNames()
	if err != nil {
		return nil, err
	}
	o.memberNames = names[1:]
	if len(o.controllers) > 0 && !slices.Contains(o.controllers, readinessController) {
		return nil, fmt.Errorf("controllers %v lack %s, which tells when kube-controller-manager works", o.controllers, readinessController)
	}
	if o.startTimeout <= 0 || o.stopGracePeriod <= 0 {
		return nil, errors.New("start timeout and stop grace period must be positive")
	}
	return o, nil
}

// clusterNames returns the validated names of all clusters, host first.
func (o *options) clusterNames() ([]string, error) {
	if o.members < 0 {
		return nil, fmt.Errorf("negative number of members %d", o.members)
	}
	members := o.memberNames
	switch {
	case members == nil:
		for i := 1; i <= o.members; i++ {
			members = append(members, fmt.Sprintf("member-%d", i))
		}
	case o.membersSet && o.members != len(members):
		return nil, fmt.Errorf("%d members wanted but %d member names given", o.members, len(members))
	}
	names := append([]string{HostName}, members...)
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			return nil, fmt.Errorf("invalid cluster name %q: %s", name, strings.Join(errs, "; "))
		}
		if seen[name] || name == "etcd" {
			return nil, fmt.Errorf("cluster name %q is reserved or used twice", name)
		}
		seen[name] = true
	}
	return names, nil
}
