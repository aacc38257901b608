// Package console implements `fedwarden console`: it serves the web
// console (internal/console) with the user's kubeconfig identity on
// 127.0.0.1, or, with --auth=token, to every user signed in with their own
// bearer token.
package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	webconsole "github.com/fedwarden/fedwarden/internal/console"
	"github.com/fedwarden/fedwarden/internal/egress"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/memorylimit"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// DefaultAddress is where the console listens unless --address says
// otherwise: this machine only.
const DefaultAddress = "127.0.0.1:8800"

// inClusterCA is the host's CA in a pod that mounts its ServiceAccount.
const inClusterCA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"

// options are the flags of console.
type options struct {
	auth          string
	address       string
	allowRemote   bool
	host          kubeconfig.Source
	hostServer    string
	hostCAFile    string
	controlPlane  string
	idleTimeout   time.Duration
	maxIdentities int
	maxObjects    int
	tokenRecheck  time.Duration
	timeout       time.Duration
	memberNets    []string
	networks      egress.Networks
	memory        memorylimit.Options
}

const long = `Console serves Fedwarden's web console: the fleet of federated resources by
member clusters with each copy's drift state, updated live; each resource's
copies, a diff of desired against live per cluster (a Secret's values
redacted), its drift ledger and a Resync button; the clusters; and the history
of drift episodes. The pages use nothing from any other site.

--auth=local (the default) reads and acts with your kubeconfig's identity
(--host-kubeconfig, --host-context), like kubectl proxy, and listens on
127.0.0.1 only: it refuses another address, or a request for another host
name, unless --allow-remote is given, since whoever reaches it acts as you.

--auth=token is for running it in a cluster (the Helm chart's
console.enabled): the console has no rights of its own. Each user signs in
with a bearer token the host accepts (kept in an HttpOnly, SameSite=Strict
cookie, or sent as Authorization: Bearer), and every read and action goes to
the host's API server with that token: RBAC decides what each user sees and
may do. The host is --host-server (default: the in-cluster address) verified
with --host-ca-file (default: the in-cluster CA); with --host-kubeconfig,
only the server and CA of the context are used, never its credentials.

The host must be https:// in token mode: the console refuses an http://
one, which would carry the users' tokens in clear.

The console caches what each identity sees (ClusterPropagatedVersions,
FederatedClusters, the agents' Leases), fed by watches, at most
--max-objects-per-identity objects each, and stops an identity's caches
after --idle-timeout without a request. In token mode it asks the host
again, after --token-recheck, whether it still accepts each token and lets
it list what its caches hold, and drops the caches of one it refuses.

See docs/console.md.`

const example = `  # With your kubeconfig, on http://127.0.0.1:8800/
  fedwarden console

  # Another port, another context
  fedwarden console --address 127.0.0.1:9000 --host-context prod-host

  # In a cluster, each user signing in with a token (what the Helm chart runs)
  fedwarden console --auth=token --address 0.0.0.0:8800 --allow-remote`

// NewCommand returns `fedwarden console`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "console",
		Short:   "Serve the web console: fleet drift, resources, clusters and history",
		Long:    long,
		Example: example,
		Args:    cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), s, o)
		},
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVar(&o.auth, "auth", string(webconsole.ModeLocal), "whose identity the console uses: local (your kubeconfig's) or token (each signed-in user's bearer token)")
	f.StringVar(&o.address, "address", DefaultAddress, "address to listen on, host:port")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "listen on an address other than a loopback one, and serve any host name: "+
		"with --auth=local whoever reaches the console acts as you")
	f.StringVar(&o.hostServer, "host-server", "", "with --auth=token: the host API server's URL (default: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, else the kubeconfig's server)")
	f.StringVar(&o.hostCAFile, "host-ca-file", "", "with --auth=token: the CA bundle (PEM) that verifies the host API server (default: "+inClusterCA+" in a pod, else the kubeconfig's)")
	f.StringVar(&o.controlPlane, "control-plane-namespace", corev1beta1.DefaultFederationNamespace,
		"control-plane namespace of the host: the members' credential Secrets, the agents' Leases, the CPVs of cluster-scoped resources")
	f.DurationVar(&o.idleTimeout, "idle-timeout", webconsole.DefaultIdleTimeout, "stop the caches of an identity not seen for that long")
	f.IntVar(&o.maxIdentities, "max-identities", webconsole.DefaultMaxIdentities, "with --auth=token: most identities cached at a time (the least recently used is stopped)")
	f.IntVar(&o.maxObjects, "max-objects-per-identity", webconsole.DefaultMaxObjectsPerIdentity,
		"most objects (CPVs, FederatedClusters, agents' Leases) cached for one identity; one that sees more is told so and gets no caches for --idle-timeout")
	f.DurationVar(&o.tokenRecheck, "token-recheck", webconsole.DefaultTokenRecheck,
		"with --auth=token: how long a token is served before the host is asked again whether it accepts it and what it may list (at most 1m)")
	f.DurationVar(&o.timeout, "timeout", webconsole.DefaultRequestTimeout, "how long any one request to the host or a member may take")
	f.StringSliceVar(&o.memberNets, "member-networks", nil, "CIDRs member API servers may be reached at for a diff, as the controller-manager's flag of that name (default: any address)")
	o.memory.AddFlags(f)
	return cmd
}

// maxTokenRecheck is the longest --token-recheck: a token, or a right,
// the host withdrew is served at most this long (plus the API server's own
// token cache).
const maxTokenRecheck = time.Minute

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	errs := []error{o.memory.Validate()}
	if o.auth != string(webconsole.ModeLocal) && o.auth != string(webconsole.ModeToken) {
		errs = append(errs, fmt.Errorf("--auth %q: local or token", o.auth))
	}
	host, _, err := net.SplitHostPort(o.address)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("--address %q: %w", o.address, err))
	case !o.allowRemote && !loopback(host):
		errs = append(errs, fmt.Errorf("--address %s is not a loopback address: whoever reaches the console there would use it; pass --allow-remote to listen there anyway", o.address))
	}
	if msgs := validation.IsDNS1123Label(o.controlPlane); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--control-plane-namespace: %q is not a namespace name: %s", o.controlPlane, strings.Join(msgs, "; ")))
	}
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout), cmdline.PositiveDuration("--idle-timeout", o.idleTimeout),
		cmdline.PositiveDuration("--token-recheck", o.tokenRecheck))
	if o.tokenRecheck > maxTokenRecheck {
		errs = append(errs, fmt.Errorf("--token-recheck %s is longer than %s: a revoked token or a removed RoleBinding would be served that long", o.tokenRecheck, maxTokenRecheck))
	}
	if o.maxIdentities <= 0 {
		errs = append(errs, fmt.Errorf("--max-identities %d must be positive", o.maxIdentities))
	}
	if o.maxObjects <= 0 {
		errs = append(errs, fmt.Errorf("--max-objects-per-identity %d must be positive", o.maxObjects))
	}
	if o.auth == string(webconsole.ModeLocal) && (o.hostServer != "" || o.hostCAFile != "") {
		errs = append(errs, errors.New("--host-server and --host-ca-file are for --auth=token; with --auth=local the kubeconfig says where the host is"))
	}
	networks, err := egress.ParseNetworks(o.memberNets)
	if err != nil {
		errs = append(errs, fmt.Errorf("--member-networks: %w", err))
	}
	o.networks = networks
	return errors.Join(errs...)
}

// loopback tells whether host names this machine only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	host, who, err := o.hostConfig()
	if err != nil {
		return streams.UsageError(err)
	}
	o.memory.Apply(funcr.New(func(_, args string) { fmt.Fprintln(s.ErrOut, args) }, funcr.Options{}))
	srv, err := webconsole.New(webconsole.Options{
		Mode: webconsole.Mode(o.auth), Host: host, ControlPlaneNamespace: o.controlPlane, IdleTimeout: o.idleTimeout,
		MaxIdentities: o.maxIdentities, MaxObjectsPerIdentity: o.maxObjects, TokenRecheck: o.tokenRecheck,
		RequestTimeout: o.timeout, MemberNetworks: o.networks, AllowAnyHost: o.allowRemote,
	})
	if errors.Is(err, webconsole.ErrPlainHTTPHost) {
		return streams.UsageError(fmt.Errorf("%w; that address comes from %s: pass --host-server https://HOST:PORT (and --host-ca-file)", err, who.source))
	}
	if err != nil {
		return streams.UsageError(err)
	}
	ln, err := net.Listen("tcp", o.address)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.address, err)
	}
	fmt.Fprintf(s.Out, "Fedwarden console: %s (%s)\n", URL(ln.Addr().String()), who.identity)
	fmt.Fprintln(s.ErrOut, "Ctrl-C stops it.")
	return srv.Serve(ctx, ln)
}

// URL is the console's address as a browser takes it.
func URL(address string) string {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return "http://" + address + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// hostSource says whom the console acts as, and where the host's address
// came from (for messages).
type hostSource struct {
	identity string
	source   string
}

// hostConfig returns where the host is, and with --auth=local who the
// console acts as; with --auth=token it holds no credentials.
func (o *options) hostConfig() (*rest.Config, hostSource, error) {
	if o.auth == string(webconsole.ModeLocal) {
		c, err := kubeconfig.Load(o.host)
		if err != nil {
			return nil, hostSource{}, err
		}
		return c.Config, hostSource{identity: fmt.Sprintf("as context %q of %s", c.Context, c.File)}, nil
	}
	server, caFile := o.hostServer, o.hostCAFile
	source := "--host-server"
	if server == "" {
		if h, p := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"); h != "" && p != "" {
			server = "https://" + net.JoinHostPort(h, p)
			source = "the pod's environment (KUBERNETES_SERVICE_HOST)"
			if caFile == "" {
				caFile = inClusterCA
			}
		}
	}
	cfg := &rest.Config{Host: server}
	if server == "" {
		c, err := kubeconfig.Load(o.host)
		if err != nil {
			return nil, hostSource{}, fmt.Errorf("--auth=token: no --host-server, not in a pod, and %w", err)
		}
		cfg = &rest.Config{Host: c.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData, ServerName: c.TLSServerName}}
		source = fmt.Sprintf("the context %q of %s (--host-kubeconfig, --host-context)", c.Context, c.File)
	}
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			return nil, hostSource{}, fmt.Errorf("--host-ca-file: %w", err)
		}
		cfg.CAData = data
	}
	return cfg, hostSource{identity: "each user signs in with a token for " + cfg.Host, source: source}, nil
}
