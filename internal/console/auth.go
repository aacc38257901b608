package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		status := http.StatusInternalServerError
		if errors.Is(err, errSignIn) {
			status = http.StatusUnauthorized
		}
		if page && status == http.StatusUnauthorized {
			s.renderSignIn(w, status, r.URL.RequestURI(), "")
			return
		}
		writeError(w, status, err.Error())
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
	id := tokenID(token)
	v, err := s.views.get(id, func() (*view, error) {
		cfg := s.userConfig(token)
		if _, err := whoAmI(r.Context(), cfg, s.opts.RequestTimeout); err != nil {
			return nil, err
		}
		return s.startView(id, cfg)
	})
	if err != nil {
		return nil, err
	}
	if v.unauthorized() {
		s.views.drop(id)
		return nil, errSignIn
	}
	return v, nil
}

func (s *Server) startView(id string, cfg *rest.Config) (*view, error) {
	return startView(s.ctx, id, cfg, s.opts.ControlPlaneNamespace)
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

// whoAmI asks the host who cfg authenticates as (a SelfSubjectReview,
// which every authenticated user may create); a token the host does not
// accept gives errSignIn.
func whoAmI(ctx context.Context, cfg *rest.Config, timeout time.Duration) (string, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	review := &authenticationv1.SelfSubjectReview{}
	err = c.Create(ctx, review)
	switch {
	case apierrors.IsUnauthorized(err):
		return "", errSignIn
	case err != nil:
		return "", err
	}
	return review.Status.UserInfo.Username, nil
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
	http.SetCookie(w, &http.Cookie{
		Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overHTTPS(r),
	})
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

// signOut forgets the cookie and stops the identity's caches.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if token := requestToken(r); token != "" {
		s.views.drop(tokenID(token))
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overHTTPS(r)})
	http.Redirect(w, r, "signin", http.StatusSeeOther)
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
