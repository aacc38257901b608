package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestRequestToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header string
		cookie string
		want   string
	}{
		{name: "bearer header", header: "Bearer abc", want: "abc"},
		{name: "header wins over cookie", header: "Bearer abc", cookie: "def", want: "abc"},
		{name: "cookie", cookie: "def", want: "def"},
		{name: "another scheme is no token", header: "Basic dXNlcjpwYXNz", cookie: "def", want: ""},
		{name: "nothing", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/fleet", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			if tt.cookie != "" {
				r.AddCookie(&http.Cookie{Name: tokenCookie, Value: tt.cookie})
			}
			if got := requestToken(r); got != tt.want {
				t.Errorf("requestToken = %q, want %q", got, tt.want)
			}
		})
	}
	if a, b := tokenID("abc"), tokenID("abd"); a == b || len(a) != len("token:")+64 {
		t.Errorf("token ids %q, %q", a, b)
	}
}

func TestLoopbackHostAndOrigin(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1:8800": true, "localhost:8800": true, "[::1]:8800": true, "127.0.0.1": true,
		"rebound.example:8800": false, "10.0.0.1:8800": false, "": false, // loopback-check: not dialed
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
	for _, tt := range []struct {
		origin, fetchSite string
		want              bool
	}{
		{origin: "http://127.0.0.1:8800", want: true},
		{origin: "https://127.0.0.1:8800", want: true},
		{origin: "http://evil.example", want: false}, // loopback-check: not dialed
		{origin: "null", want: false},
		{origin: "", want: true},
		{origin: "", fetchSite: "cross-site", want: false},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8800/api/resync", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.fetchSite != "" {
			r.Header.Set("Sec-Fetch-Site", tt.fetchSite)
		}
		if got := sameOrigin(r); got != tt.want {
			t.Errorf("sameOrigin(Origin %q, Sec-Fetch-Site %q) = %v, want %v", tt.origin, tt.fetchSite, got, tt.want)
		}
	}
}

func TestViewErrorStatus(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want int
	}{
		{err: errSignIn, want: http.StatusUnauthorized},
		{err: fmt.Errorf("%w: FederatedClusters", errLostRights), want: http.StatusForbidden},
		{err: fmt.Errorf("%w: %w", errUnconfirmed, errors.New("connection refused")), want: http.StatusServiceUnavailable},
		{err: tooMany(10), want: http.StatusServiceUnavailable},
		{err: errors.New("creating a client of the host"), want: http.StatusInternalServerError},
	} {
		if got := viewErrorStatus(tt.err); got != tt.want {
			t.Errorf("viewErrorStatus(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if msg := tooMany(10).Error(); !strings.Contains(msg, "more than 10 objects") || !strings.Contains(msg, "--max-objects-per-identity") {
		t.Errorf("the message of too many objects does not say the limit and its flag: %q", msg)
	}
}

// TestSessionCookiePath: the cookie is scoped to the directory of the
// sign-in page, the console's base path behind any prefix, and signing out
// clears it there and where earlier versions set it ("/").
func TestSessionCookiePath(t *testing.T) {
	t.Parallel()
	if c := sessionCookie(httptest.NewRequest(http.MethodPost, "/signin", nil), "t"); c.Path != "" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("the session cookie %+v: want no Path (the browser scopes it to the sign-in page's directory), HttpOnly, SameSite=Strict", c)
	}
	s := &Server{opts: Options{Mode: ModeToken}, views: newRegistry(1, time.Hour)}
	r := httptest.NewRequest(http.MethodPost, "/signout", nil)
	r.AddCookie(&http.Cookie{Name: tokenCookie, Value: "t"})
	w := httptest.NewRecorder()
	s.signOut(w, r)
	var paths []string
	for _, c := range w.Result().Cookies() {
		if c.Name == tokenCookie && c.MaxAge < 0 {
			paths = append(paths, c.Path)
		}
	}
	if !slices.Equal(paths, []string{"", "/"}) {
		t.Errorf("signing out expires the cookie at paths %q, want the sign-in page's (no Path) and /", paths)
	}
}

// TestTokenModeRefusesPlainHTTP: in token mode the host's address must be
// https, loopback or not; local mode sends no user's token.
func TestTokenModeRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	ca := rest.TLSClientConfig{CAData: []byte("-----BEGIN CERTIFICATE-----")}
	for _, tt := range []struct {
		name string
		opts Options
		want error
	}{
		{name: "http", opts: Options{Mode: ModeToken, Host: &rest.Config{Host: "http://10.0.0.1:8080"}}, want: ErrPlainHTTPHost}, // loopback-check: not dialed
		{name: "loopback http", opts: Options{Mode: ModeToken, Host: &rest.Config{Host: "http://127.0.0.1:8001"}}, want: ErrPlainHTTPHost},
		{name: "no scheme, no CA", opts: Options{Mode: ModeToken, Host: &rest.Config{Host: "127.0.0.1:6443"}}, want: ErrPlainHTTPHost},
		{name: "http with a CA", opts: Options{Mode: ModeToken, Host: &rest.Config{Host: "http://127.0.0.1:6443", TLSClientConfig: ca}}, want: ErrPlainHTTPHost},
		{name: "https", opts: Options{Mode: ModeToken, Host: &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: ca}}},
		{name: "no scheme, a CA", opts: Options{Mode: ModeToken, Host: &rest.Config{Host: "127.0.0.1:6443", TLSClientConfig: ca}}},
		{name: "local mode", opts: Options{Mode: ModeLocal, Host: &rest.Config{Host: "http://127.0.0.1:8001"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("New(%s) = %v, want %v", tt.opts.Host.Host, err, tt.want)
			}
		})
	}
}
