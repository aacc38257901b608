package console_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/console"
	"github.com/fedwarden/fedwarden/test/poll"
)

// recheck is how often the tests' token-mode consoles ask the host again
// (a minute by default).
const recheck = time.Second

// tokenConsole serves a token-mode console, which has no credentials of
// its own, that rechecks identities every recheck.
func tokenConsole(t *testing.T) string {
	t.Helper()
	return startConsole(t, console.Options{Mode: console.ModeToken, TokenRecheck: recheck,
		Host: &rest.Config{Host: fed.Host.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: fed.Host.CAData}}})
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// readerFleet is a namespace with one CPV, and a reader's token.
func readerFleet(ctx context.Context, t *testing.T, ns string) string {
	t.Helper()
	host := hostClient(t)
	createNamespace(ctx, t, host, ns)
	createCPV(ctx, t, host, ns, "web", []string{"c1"}, typesv1beta1.ClusterPropagatedVersionStatus{
		ClusterVersions: []typesv1beta1.ClusterVersion{{ClusterName: "c1", State: typesv1beta1.InSync}},
	})
	return serviceAccountToken(ctx, t, host, ns, "reader", true)
}

// seesFleet checks that token's user is served the one row of ns.
func seesFleet(t *testing.T, base, ns, token string) {
	t.Helper()
	var page console.Fleet
	if res, body := call(t, http.MethodGet, base+"api/fleet?ns="+ns, bearer(token), &page); res.StatusCode != http.StatusOK || page.Total != 1 {
		t.Fatalf("the reader's fleet: %s %s", res.Status, body)
	}
}

// TestARevokedTokenIsSignedOutWithinAMinute: a user signed in with a
// ServiceAccount token is served from the caches its first request
// started; once the ServiceAccount is deleted (its tokens revoked), the
// live stream the page holds open ends, and the next request gets 401 and
// the sign-in page. The caches' watches
// outlive the token, so without the recheck the fleet was served on.
func TestARevokedTokenIsSignedOutWithinAMinute(t *testing.T) {
	needFederation(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "revoked"
	token := readerFleet(ctx, t, ns)
	base := tokenConsole(t)
	seesFleet(t, base, ns, token)
	stream := openStream(ctx, t, base+"api/events?ns="+ns, token)

	if err := hostClient(t).Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}}); err != nil {
		t.Fatal(err)
	}
	// A page that holds the stream open makes no request: the console
	// rechecks its identity by itself. (The API server caches a token's
	// authentication for 10 s.)
	select {
	case <-stream:
	case <-time.After(time.Minute):
		t.Error("the live stream opened with the revoked token is still open after a minute")
	}
	poll.Eventually(t, time.Minute, "the revoked token's request gets 401", func(context.Context) (bool, string) {
		res, body := call(t, http.MethodGet, base+"api/fleet?ns="+ns, bearer(token), nil)
		return res.StatusCode == http.StatusUnauthorized, res.Status + " " + body
	})
	if res, body := call(t, http.MethodGet, base+"?ns="+ns, bearer(token), nil); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `action="signin"`) {
		t.Errorf("the fleet page with the revoked token: %s, want 401 and the sign-in page", res.Status)
	}
}

// TestAForbiddenIdentityLosesItsCachedView: a reader sees the fleet from
// its caches; once its ClusterRoleBinding is deleted, the console stops
// serving what it cached (the watches would have gone on feeding it) and
// says the user may not list the CPVs, as for a user who never could.
func TestAForbiddenIdentityLosesItsCachedView(t *testing.T) {
	needFederation(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "forbidden"
	token := readerFleet(ctx, t, ns)
	base := tokenConsole(t)
	seesFleet(t, base, ns, token)

	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: readerBinding(ns, "reader")}}
	if err := hostClient(t).Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, time.Minute, "the fleet is no longer served from the caches", func(context.Context) (bool, string) {
		var page console.Fleet
		res, body := call(t, http.MethodGet, base+"api/fleet?ns="+ns, bearer(token), &page)
		return res.StatusCode == http.StatusOK && page.Total == 0 && len(page.Problems) > 0 &&
			strings.Contains(page.Problems[0], "you may not list ClusterPropagatedVersions in all namespaces"), res.Status + " " + body
	})
	var history console.History
	if call(t, http.MethodGet, base+"api/history?ns="+ns, bearer(token), &history); history.Total != 0 {
		t.Errorf("the history still shows %d episodes", history.Total)
	}
}

// TestAnIdentityThatSeesTooMuchIsToldSo: an identity that may see more
// objects than the console caches for one gets 503 with the limit and the
// flag that raises it, not an ever-growing cache.
func TestAnIdentityThatSeesTooMuchIsToldSo(t *testing.T) {
	needFederation(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns = "toomany"
	host := hostClient(t)
	createNamespace(ctx, t, host, ns)
	for i := range 3 {
		createCPV(ctx, t, host, ns, fmt.Sprintf("web-%d", i), []string{"c1"}, typesv1beta1.ClusterPropagatedVersionStatus{})
	}
	base := startConsole(t, console.Options{Host: fed.Host.Config, MaxObjectsPerIdentity: 2})
	poll.Eventually(t, time.Minute, "a view of more than 2 objects is refused", func(context.Context) (bool, string) {
		res, body := call(t, http.MethodGet, base+"api/fleet?ns="+ns, nil, nil)
		return res.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, "more than 2 objects") &&
			strings.Contains(body, "--max-objects-per-identity"), res.Status + " " + body
	})
}

// TestTheSignInCookieStaysUnderTheConsolesPath: behind a proxy that serves
// the console under /console/, the browser keeps the token's cookie for
// /console and sends it to nothing else of that host.
func TestTheSignInCookieStaysUnderTheConsolesPath(t *testing.T) {
	needFederation(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	token := serviceAccountToken(ctx, t, hostClient(t), "default", "cookie-path", false)
	base := startConsole(t, console.Options{Mode: console.ModeToken,
		Host: &rest.Config{Host: fed.Host.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: fed.Host.CAData}}})
	proxy := startPathProxy(t, "/console", base)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := browser.PostForm(proxy+"/console/signin", url.Values{"token": {token}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in: %s", res.Status)
	}
	for path, want := range map[string]bool{"/console/": true, "/console/api/fleet": true, "/": false, "/other-app/": false} {
		u, _ := url.Parse(proxy + path)
		if got := len(jar.Cookies(u)) == 1; got != want {
			t.Errorf("the browser sends the token's cookie to %s: %v, want %v", path, got, want)
		}
	}
}

// startPathProxy serves, on 127.0.0.1 until the test ends, a reverse
// proxy that forwards what comes under prefix to the console at base,
// prefix taken off, as an ingress serving the console under a path does.
// It returns the proxy's URL.
func startPathProxy(t *testing.T, prefix, base string) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: http.StripPrefix(prefix, httputil.NewSingleHostReverseProxy(target)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(ln) }()
	t.Cleanup(func() { _ = server.Close() })
	return "http://" + ln.Addr().String()
}

// openStream opens the live stream at u with token, and returns a channel
// closed when the stream ends.
func openStream(ctx context.Context, t *testing.T, u, token string) <-chan struct{} {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = bearer(token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() {
		t.Fatal("the stream ended before its first line")
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer res.Body.Close()
		for sc.Scan() {
		}
	}()
	return ended
}
