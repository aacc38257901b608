package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/egress"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/scheme"
)

// Mode says whose identity the console reads and acts with.
type Mode string

const (
	// ModeLocal: the identity of the configuration the console was given,
	// the user's kubeconfig; one view for every request.
	ModeLocal Mode = "local"
	// ModeToken: each request's own bearer token (a cookie set by the
	// sign-in page, or an Authorization header); the console has no
	// identity of its own.
	ModeToken Mode = "token"
)

// Options configure a console.
type Options struct {
	// Mode is ModeLocal (the default) or ModeToken.
	Mode Mode
	// Host is the host cluster's configuration. In ModeToken only its
	// address and CA are used: any credentials in it are dropped.
	Host *rest.Config
	// ControlPlaneNamespace holds the members' credentials, the agents'
	// Leases and the CPVs of cluster-scoped resources.
	ControlPlaneNamespace string
	// IdleTimeout stops the caches of an identity not seen for that long.
	IdleTimeout time.Duration
	// MaxIdentities bounds how many identities have caches at a time.
	MaxIdentities int
	// MaxObjectsPerIdentity bounds the objects one identity's caches hold
	// (CPVs, FederatedClusters and Leases together): an identity that sees
	// more gets an error saying so, and no caches, for IdleTimeout.
	MaxObjectsPerIdentity int
	// TokenRecheck is how long, in ModeToken, the console serves an
	// identity before it asks the host again whether it accepts the token
	// and lets it list what its caches hold.
	TokenRecheck time.Duration
	// RequestTimeout bounds each request to the host or a member made for
	// a page.
	RequestTimeout time.Duration
	// MemberNetworks are the networks members may be reached at for a
	// diff; empty: any.
	MemberNetworks egress.Networks
	// AllowAnyHost accepts requests whatever their Host header; otherwise,
	// in ModeLocal, only a loopback Host (127.0.0.1, [::1], localhost) is
	// served, so that a web page whose name resolves to 127.0.0.1 cannot
	// read the console with the user's identity (DNS rebinding).
	AllowAnyHost bool
}

// Defaults of Options.
const (
	DefaultIdleTimeout           = 10 * time.Minute
	DefaultMaxIdentities         = 100
	DefaultMaxObjectsPerIdentity = 50000
	DefaultRequestTimeout        = 30 * time.Second
	DefaultTokenRecheck          = time.Minute
)

// ErrPlainHTTPHost: in ModeToken the host is reached over plain HTTP, so
// the users' bearer tokens would cross the network in clear.
var ErrPlainHTTPHost = errors.New("token mode sends each user's bearer token to the host, and the host's address is http://: " +
	"the tokens would cross the network in clear; give the host's https:// address and the CA that verifies it")

// Server serves the console.
type Server struct {
	opts    Options
	base    *rest.Config
	views   *registry
	members *memberdiff.Members
	ctx     context.Context
	handler http.Handler
}

// clientScheme knows the Kubernetes kinds and Fedwarden's.
var clientScheme = scheme.New()

// New returns a console; Serve runs it.
func New(opts Options) (*Server, error) {
	if opts.Host == nil || opts.Host.Host == "" {
		return nil, errors.New("the host's address is not set")
	}
	switch opts.Mode {
	case "":
		opts.Mode = ModeLocal
	case ModeLocal, ModeToken:
	default:
		return nil, fmt.Errorf("unknown mode %q: local or token", opts.Mode)
	}
	if opts.Mode == ModeToken && opts.Host.Insecure {
		return nil, errors.New("token mode sends the users' tokens to the host: its certificate must be verified")
	}
	if opts.Mode == ModeToken && !rest.IsConfigTransportTLS(*withoutCredentials(opts.Host)) {
		return nil, fmt.Errorf("%w (%s)", ErrPlainHTTPHost, opts.Host.Host)
	}
	if opts.ControlPlaneNamespace == "" {
		opts.ControlPlaneNamespace = corev1beta1.DefaultFederationNamespace
	}
	opts.IdleTimeout = cmpOr(opts.IdleTimeout, DefaultIdleTimeout)
	opts.RequestTimeout = cmpOr(opts.RequestTimeout, DefaultRequestTimeout)
	opts.TokenRecheck = cmpOr(opts.TokenRecheck, DefaultTokenRecheck)
	if opts.MaxIdentities <= 0 {
		opts.MaxIdentities = DefaultMaxIdentities
	}
	if opts.MaxObjectsPerIdentity <= 0 {
		opts.MaxObjectsPerIdentity = DefaultMaxObjectsPerIdentity
	}
	s := &Server{
		opts:    opts,
		views:   newRegistry(opts.MaxIdentities, opts.IdleTimeout),
		members: memberdiff.NewMembers(opts.ControlPlaneNamespace, opts.MemberNetworks, "fedwarden-console"),
		ctx:     context.Background(),
	}
	if opts.Mode == ModeToken {
		s.base = withoutCredentials(opts.Host)
	} else {
		s.base = rest.CopyConfig(opts.Host)
	}
	s.base.UserAgent = "fedwarden-console"
	s.handler = s.routes()
	return s, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Handler serves the console's pages and API.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves the console on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctx = ctx
	go s.views.reap(ctx, time.Minute)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// routes maps the console's paths. Pages, static files and the sign-in
// page are relative to wherever the console is served.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles()))
	mux.HandleFunc("GET /favicon.ico", serveFavicon)
	mux.HandleFunc("GET /signin", s.serveSignIn)
	mux.HandleFunc("POST /signin", s.signIn)
	mux.HandleFunc("POST /signout", s.signOut)
	for path, page := range map[string]string{"/{$}": "fleet", "/resource": "resource", "/clusters": "clusters", "/history": "history"} {
		mux.HandleFunc("GET "+path, s.withView(true, func(w http.ResponseWriter, r *http.Request, v *view) { s.servePage(w, page) }))
	}
	mux.HandleFunc("GET /api/whoami", s.withView(false, s.serveWhoAmI))
	mux.HandleFunc("GET /api/fleet", s.withView(false, s.serveFleet))
	mux.HandleFunc("GET /api/history", s.withView(false, s.serveHistory))
	mux.HandleFunc("GET /api/clusters", s.withView(false, s.serveClusters))
	mux.HandleFunc("GET /api/resource", s.withView(false, s.serveResource))
	mux.HandleFunc("GET /api/diff", s.withView(false, s.serveDiff))
	mux.HandleFunc("POST /api/resync", s.withView(false, s.serveResync))
	mux.HandleFunc("POST /api/codify", s.withView(false, s.serveCodify))
	mux.HandleFunc("POST /api/waive", s.withView(false, s.serveWaive))
	mux.HandleFunc("GET /api/events", s.withView(false, s.serveEvents))
	return s.secure(mux)
}

// secure adds the headers every answer carries, and refuses what the
// console never serves: a foreign Host in local mode, a cross-site write.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if s.opts.Mode == ModeLocal && !s.opts.AllowAnyHost && !loopbackHost(r.Host) {
			http.Error(w, "this console serves only loopback names (127.0.0.1, localhost); start it with --allow-remote to serve others", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost && !sameOrigin(r) {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost tells whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin tells whether a write comes from the console's own pages:
// its Origin, when sent, is the console's.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return origin == "" && r.Header.Get("Sec-Fetch-Site") != "cross-site"
	}
	for _, scheme := range []string{"http://", "https://"} {
		if origin == scheme+r.Host {
			return true
		}
	}
	return false
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is the body of an API error.
type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}

// requestContext bounds a request to the host or a member.
func (s *Server) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.opts.RequestTimeout)
}
