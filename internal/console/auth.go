package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tokenCookie holds a signed-in user's bearer token in token mode:
// HttpOnly (no script reads it), SameSite=Strict (no other site sends it),
// Secure when the console is reached over HTTPS.
const tokenCookie = "fedwarden-console-token"

// localID is the key of the only view of local mode.
const localID = "local"

// errSignIn: the request carries no token the host accepts.
var errSignIn = errors.New("sign in with a bearer token the host accepts")

// errUnconfirmed: the host could not be asked whether it still accepts
// the identity; the console serves nothing it cannot confirm.
var errUnconfirmed = errors.New("the host could not confirm your identity")

// viewHandler serves a request with the view of its identity.
type viewHandler func(w http.ResponseWriter, r *http.Request, v *view)

// withView finds the identity of a request and its view, and serves it;
// a request without a valid token gets 401: the sign-in page for a page,
// a JSON error for the API.
func (s *Server) withView(page bool, h viewHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := s.view(r)
		if err == nil {
			h(w, r, v)
			return
		}
		status := viewErrorStatus(err)
		if page && status == http.StatusUnauthorized {
			s.renderSignIn(w, status, r.URL.RequestURI(), "")
			return
		}
		writeError(w, status, err.Error())
	}
}

// viewErrorStatus is the HTTP status of a request the console cannot
// serve with a view.
func viewErrorStatus(err error) int {
	switch {
	case errors.Is(err, errSignIn):
		return http.StatusUnauthorized
	case errors.Is(err, errLostRights):
		return http.StatusForbidden
	case errors.Is(err, errUnconfirmed), errors.Is(err, errTooManyObjects):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// view returns the view of the request's identity, starting it on first
// use.
func (s *Server) view(r *http.Request) (*view, error) {
	if s.opts.Mode == ModeLocal {
		return s.views.get(localID, func() (*view, error) {
			return s.startView(localID, s.base)
		})
	}
	token := requestToken(r)
	if token == "" {
		return nil, errSignIn
	}
	v, err := s.tokenView(r.Context(), token)
	if errors.Is(err, errLostRights) {
		// A new view lists with the rights the identity has now: what it
		// may no longer read, it no longer sees.
		v, err = s.tokenView(r.Context(), token)
	}
	return v, err
}

// tokenView returns the view of token's identity, which the host has
// confirmed within the last TokenRecheck; a view whose identity the host
// no longer accepts, or refuses what the view cached, is stopped and
// forgotten.
func (s *Server) tokenView(ctx context.Context, token string) (*view, error) {
	id := tokenID(token)
	v, err := s.views.get(id, func() (*view, error) {
		cfg := s.userConfig(token)
		if _, err := whoAmI(ctx, cfg, s.opts.RequestTimeout); err != nil {
			return nil, err
		}
		v, err := s.startView(id, cfg)
		if err == nil {
			go v.recheckWhileStreaming(s.opts.TokenRecheck, s.opts.RequestTimeout, s.views.remove)
		}
		return v, err
	})
	if err != nil {
		return nil, err
	}
	err = v.stale()
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		err = v.recheck(rctx, s.opts.TokenRecheck)
		cancel()
	}
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, errSignIn), errors.Is(err, errLostRights):
		s.views.remove(v)
		return nil, err
	default:
		return nil, fmt.Errorf("%w: %w", errUnconfirmed, err)
	}
}

func (s *Server) startView(id string, cfg *rest.Config) (*view, error) {
	limit := int64(s.opts.MaxObjectsPerIdentity)
	return startView(s.ctx, id, cfg, viewConfig{
		controlPlane: s.opts.ControlPlaneNamespace,
		maxObjects:   limit,
		full:         func(v *view) { s.views.refuse(v, tooMany(limit)) },
	})
}

// userConfig is the host's configuration with token as the only
// credentials.
func (s *Server) userConfig(token string) *rest.Config {
	cfg := rest.CopyConfig(s.base)
	cfg.BearerToken = token
	return cfg
}

// requestToken is the bearer token of r: its Authorization header, else
// the sign-in cookie.
func requestToken(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); auth != "" {
		if t, ok := strings.CutPrefix(auth, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return ""
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return c.Value
	}
	return ""
}

// tokenID is the key of a token's view: a digest, so that the token is
// kept nowhere but in the view's client.
func tokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "token:" + hex.EncodeToString(sum[:])
}

// whoAmI asks the host who cfg authenticates as; a token the host does
// not accept gives errSignIn.
func whoAmI(ctx context.Context, cfg *rest.Config, timeout time.Duration) (string, error) {
	c, err := client.New(cfg, client.Options{Scheme: clientScheme})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return selfReview(ctx, c)
}

// selfReview asks the host who c authenticates as (a SelfSubjectReview,
// which every authenticated user may create); credentials the host does
// not accept give errSignIn.
func selfReview(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	err := c.Create(ctx, review)
	switch {
	case apierrors.IsUnauthorized(err):
		return "", errSignIn
	case err != nil:
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// mayList asks the host whether c's identity may still list and watch
// resource in namespace (all when empty): SelfSubjectAccessReviews, which
// every authenticated user may create.
func mayList(ctx context.Context, c client.Client, resource schema.GroupResource, namespace string) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: resource.Group, Resource: resource.Resource},
		}}
		err := c.Create(ctx, review)
		switch {
		case apierrors.IsUnauthorized(err):
			return false, errSignIn
		case err != nil:
			return false, fmt.Errorf("asking the host whether you may %s %s: %w", verb, resource, err)
		case !review.Status.Allowed:
			return false, nil
		}
	}
	return true, nil
}

// serveSignIn shows the sign-in page; in local mode there is none.
func (s *Server) serveSignIn(w http.ResponseWriter, r *http.Request) {
	if s.opts.Mode == ModeLocal {
		http.Redirect(w, r, "./", http.StatusSeeOther)
		return
	}
	s.renderSignIn(w, http.StatusOK, r.URL.Query().Get("next"), "")
}

// signIn checks the posted token with the host, and keeps it in the
// cookie.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if s.opts.Mode == ModeLocal {
		http.Redirect(w, r, "./", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	next := r.PostFormValue("next")
	if token == "" {
		s.renderSignIn(w, http.StatusUnauthorized, next, "Paste a bearer token.")
		return
	}
	if _, err := whoAmI(r.Context(), s.userConfig(token), s.opts.RequestTimeout); err != nil {
		msg := "The host does not accept this token."
		if !errors.Is(err, errSignIn) {
			msg = "The host could not check the token: " + err.Error()
		}
		s.renderSignIn(w, http.StatusUnauthorized, next, msg)
		return
	}
	http.SetCookie(w, sessionCookie(r, token))
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

// signOut forgets the cookie and stops the identity's caches.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if token := requestToken(r); token != "" {
		s.views.drop(tokenID(token))
	}
	expired := sessionCookie(r, "")
	expired.MaxAge = -1
	http.SetCookie(w, expired)
	// Earlier versions set the cookie for the whole site.
	expired.Path = "/"
	http.SetCookie(w, expired)
	http.Redirect(w, r, "signin", http.StatusSeeOther)
}

// sessionCookie is the cookie that holds token. It has no Path attribute:
// the browser then sends it only under the directory of the page that set
// it (sign-in, sign-out), which is the console's own base path whatever
// prefix a proxy serves it under, and not to other applications of the
// same host.
func sessionCookie(r *http.Request, token string) *http.Cookie {
	return &http.Cookie{Name: tokenCookie, Value: token, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overHTTPS(r)}
}

// overHTTPS tells whether the browser reached the console over HTTPS,
// directly or through a proxy that says so.
func overHTTPS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// safeNext is where to go after signing in: a path of this console, never
// another site.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.IsAbs() || u.Host != "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") ||
		strings.HasPrefix(next, "/signin") {
		return "./"
	}
	return "." + next
}
