package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// handEditor is the field manager of the hand edits the console must name.
const handEditor = "hand-edit"

// liveTimeout bounds how long a page may take to show a change without a
// reload, the controller's sync that records it included: the console's
// goal is 2 s from the CPV's change (logged, not asserted: a test must not
// fail on a loaded machine), the bound leaves room for a shared controller
// busy with other tests' clusters.
const liveTimeout = 10*time.Second + loadSlack

// startConsole runs `fedwarden console` with args against the shared bed's
// host, stopped when t ends; its log is scanned for secrets.
func startConsole(t *testing.T, args ...string) *fedtest.Console {
	t.Helper()
	c, err := fedtest.StartConsole(fedwardenBin, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	if leaks != nil {
		leaks.AddLog(c.LogPath, c.LogPath)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
		if leaks != nil {
			if err := leaks.Keep(c.LogPath); err != nil {
				t.Error(err)
			}
		}
		if t.Failed() {
			dumpLog(c.LogPath)
		}
	})
	return c
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string { return fmt.Sprintf("%q", s) }

// cellJS is the expression of the fleet cell of name's copy in cluster.
func cellJS(namespace, name, cluster string) string {
	return fmt.Sprintf(`document.querySelector('td[data-resource$=%s][data-cluster=%s]')`, jsString("/"+namespace+"/"+name), jsString(cluster))
}

// openPage opens url in page and waits for its first render, and for its
// live stream when live is set.
func openPage(t *testing.T, page *fedtest.Page, url string, live bool) {
	t.Helper()
	if err := page.Do(chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	want := `document.body && document.body.dataset.ready === "true"`
	if live {
		want += ` && document.body.dataset.live === "true"`
	}
	if _, err := page.WaitFor(time.Minute, want); err != nil {
		html, _ := fedtest.RunPage(page, chromedp.Evaluate[string](`document.documentElement.outerHTML.slice(0, 4000)`))
		t.Fatalf("%s did not render (data-ready, data-live): %v; the page begins:\n%s", url, err, html)
	}
}

// pageText is the text of the first element that selector matches in page, ""
// when there is none.
func pageText(t *testing.T, page *fedtest.Page, selector string) string {
	t.Helper()
	s, err := fedtest.RunPage(page, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, jsString(selector))))
	if err != nil {
		t.Fatalf("reading %s: %v", selector, err)
	}
	return strings.TrimSpace(s)
}

// noConsoleErrors fails t for every error page's console logged since the
// last check.
func noConsoleErrors(t *testing.T, page *fedtest.Page, where string) {
	t.Helper()
	for _, e := range page.TakeConsoleErrors() {
		t.Errorf("console error on %s: %s", where, e)
	}
}

// handEdit changes the image of a member Deployment as a person would, as
// field manager handEditor.
func handEdit(t *testing.T, c client.Client, namespace, name, image string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "editing the member's Deployment", func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return false, err.Error()
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		if err := c.Update(ctx, d, client.FieldOwner(handEditor)); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// The console as a person uses it, in Chromium: the fleet page shows a hand
// edit in a member live (ModifiedOutOfBand, without a reload); the
// resource page shows the changed line and who changed it; Resync, under
// Alert, heals the copy and the ledger shows the episode resolved by the
// resync; no page logs a console error. A user who may only read sees the
// Resync button disabled with why, and a forced POST is refused with the
// host's 403. With FEDWARDEN_SCREENSHOTS set, the fleet, resource and
// history pages are saved as console-*.png there.
func TestConsoleShowsDriftLiveAndResyncs(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	// web is under Alert in m1 (Enforce elsewhere); api and cache make the
	// fleet page look like one.
	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2)+"\n  driftPolicy: {clusters: [{name: "+m1+", remediation: Alert}]}"))
	createObject(t, host, newFederatedDeployment(t, ns, "api", 0, placedOn(m1, m2)))
	createObject(t, host, newFederatedDeployment(t, ns, "cache", 0, placedOn(m2)))
	member1 := memberClient(t, 0)
	for _, name := range []string{"web", "api"} {
		waitForCPV(t, host, ns, "deployment-"+name, "1", "1", m1, m2)
		waitForSettled(t, member1, m1, ns, name)
	}
	waitForCPV(t, host, ns, "deployment-cache", "1", "1", m2)

	console := startConsole(t, "--host-kubeconfig", fed.Host.Kubeconfig)
	browser := fedtest.StartBrowser(t)
	page := browser.NewPage(t)

	// The fleet page, filtered to this test's namespace.
	fleetURL := fmt.Sprintf("%s/?ns=%s", console.URL, url.QueryEscape(ns))
	openPage(t, page, fleetURL, true)
	webCell := cellJS(ns, "web", m1)
	if _, err := page.WaitFor(liveTimeout, webCell+`.dataset.state === "InSync"`); err != nil {
		t.Fatalf("the fleet page shows web in %s as %q, want InSync: %v", m1, pageText(t, page, "td[data-cluster]"), err)
	}
	// A mark in the page: a reload would lose it.
	if err := page.Do(chromedp.Evaluate[chromedp.Void](`window.fedwardenNoReload = true`)); err != nil {
		t.Fatal(err)
	}

	// A hand edit in m1: the cell turns ModifiedOutOfBand live.
	edited := time.Now()
	cpvChanged := make(chan time.Time, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		for ctx.Err() == nil {
			if cpv, err := cpvOf(ctx, host, ns, "deployment-web"); err == nil {
				for _, cv := range cpv.Status.ClusterVersions {
					if string(cv.ClusterName) == m1 && cv.State == typesv1beta1.ModifiedOutOfBand {
						cpvChanged <- time.Now()
						return
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	handEdit(t, member1, ns, "web", "nginx:hotfix")
	if _, err := page.WaitFor(liveTimeout, webCell+`.dataset.state === "ModifiedOutOfBand"`); err != nil {
		t.Fatalf("the fleet cell of web in %s did not turn ModifiedOutOfBand within %s without a reload: %v", m1, liveTimeout, err)
	}
	shown := time.Now()
	// The test's poll of the CPV (every 20 ms, plus a GET) may see the
	// change after the page does: then the page was as quick as the poll
	// can tell.
	select {
	case at := <-cpvChanged:
		t.Logf("live update: the CPV recorded the edit %s after it; the fleet page showed it %s after the CPV (goal: 2s; resolution about 50 ms)",
			at.Sub(edited).Round(time.Millisecond), max(0, shown.Sub(at)).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Logf("live update: the page showed the edit %s after it; the test's poll did not see the CPV change", shown.Sub(edited).Round(time.Millisecond))
	}
	if reloaded, err := fedtest.RunPage(page, chromedp.Evaluate[bool](`window.fedwardenNoReload !== true`)); err != nil || reloaded {
		t.Errorf("the fleet page reloaded to show the change (%v)", err)
	}
	if _, err := page.WaitFor(liveTimeout, `(document.querySelector('[data-testid="count-ModifiedOutOfBand"]') || {}).textContent === "1"`); err != nil {
		t.Errorf("ModifiedOutOfBand count %q, want 1: %v", pageText(t, page, `[data-testid="count-ModifiedOutOfBand"]`), err)
	}
	page.Screenshot(t, "console-fleet")
	noConsoleErrors(t, page, "the fleet page")

	// The resource page of web, with the diff of m1.
	href, err := fedtest.RunPage(page, chromedp.Evaluate[string](fmt.Sprintf(
		`(() => { const row = %s.closest('tr'); const a = row && row.querySelector('a[data-testid="resource-link"]'); return a ? a.href : ""; })()`, webCell)))
	if err != nil || href == "" {
		t.Fatalf("no resource link in web's row (%v)", err)
	}
	resourceURL := withQuery(t, href, "cluster", m1)
	openPage(t, page, resourceURL, true)
	m1Card := fmt.Sprintf(`[data-testid="cluster-%s"]`, m1)
	if got := pageText(t, page, m1Card+` [data-testid="state"]`); !strings.Contains(got, "ModifiedOutOfBand") {
		t.Errorf("the resource page shows %s's state as %q, want ModifiedOutOfBand", m1, got)
	}
	if got := pageText(t, page, m1Card+` [data-testid="changed-by"]`); !strings.Contains(got, handEditor) {
		t.Errorf("the resource page shows %s changed by %q, want %s", m1, got, handEditor)
	}
	if got := pageText(t, page, m1Card+` [data-testid="changed-paths"]`); !strings.Contains(got, imagePath) {
		t.Errorf("the resource page shows %s's changed paths as %q, want %s", m1, got, imagePath)
	}
	if _, err := page.WaitFor(liveTimeout, `[...document.querySelectorAll('[data-testid="diff"] .add, [data-testid="diff"] .del')].some(e => e.textContent.includes("nginx:hotfix"))`); err != nil {
		diff := pageText(t, page, `[data-testid="diff"]`)
		t.Errorf("the diff shows no changed line with nginx:hotfix: %v; the diff:\n%s", err, diff)
	}
	if _, err := page.WaitFor(liveTimeout, `[...document.querySelectorAll('[data-testid="diff"] .add, [data-testid="diff"] .del')].some(e => e.textContent.includes("nginx:1.27"))`); err != nil {
		t.Errorf("the diff shows no changed line with the desired nginx:1.27: %v", err)
	}
	page.Screenshot(t, "console-resource")

	// Resync, as the signed-in admin: the copy is healed, and the ledger
	// credits the resync.
	if err := page.Do(chromedp.WaitEnabled(chromedp.CSS(`button[data-testid="resync"]`)), chromedp.Click(chromedp.CSS(`button[data-testid="resync"]`))); err != nil {
		t.Fatalf("clicking Resync: %v", err)
	}
	if _, err := page.WaitFor(30*time.Second, `(e => e && !e.hidden && e.textContent.trim() && e.textContent.trim() !== "requesting…")(document.querySelector('[data-testid="resync-result"]'))`); err != nil {
		t.Errorf("no resync result shown after the click: %v", err)
	}
	t.Logf("resync result: %q", pageText(t, page, `[data-testid="resync-result"]`))
	waitForImage(t, member1, ns, "web", "nginx:1.27")
	waitForEntry(t, host, ns, "deployment-web", m1, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.InSync })
	if _, err := page.WaitFor(liveTimeout, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent.includes("InSync")`, jsString(m1Card+` [data-testid="state"]`))); err != nil {
		t.Errorf("the resource page did not show %s back InSync live: %v", m1, err)
	}
	episode := fmt.Sprintf(`document.querySelector('table[data-testid="history"] tr[data-testid="episode"][data-cluster=%s][data-resolved-by="Resync"]')`, jsString(m1))
	if _, err := page.WaitFor(liveTimeout, episode); err != nil {
		openPage(t, page, resourceURL, false)
		if _, err := page.WaitFor(liveTimeout, episode); err != nil {
			t.Errorf("the ledger on the resource page has no episode of %s resolved by Resync, even after a reload: %v; it shows:\n%s", m1, err, pageText(t, page, `table[data-testid="history"]`))
		} else {
			t.Errorf("the ledger showed the episode of %s resolved by Resync only after a reload", m1)
		}
	}
	noConsoleErrors(t, page, "the resource page")

	// Back on the fleet page, the cell is InSync again.
	openPage(t, page, fleetURL, true)
	if _, err := page.WaitFor(liveTimeout, webCell+`.dataset.state === "InSync"`); err != nil {
		t.Errorf("the fleet cell of web in %s is not InSync after the resync: %v", m1, err)
	}
	noConsoleErrors(t, page, "the fleet page, after the resync")

	// The history page: the fleet's timeline has the episode.
	openPage(t, page, fmt.Sprintf("%s/history?ns=%s", console.URL, url.QueryEscape(ns)), true)
	timeline := fmt.Sprintf(`document.querySelector('table[data-testid="timeline"] tr[data-testid="episode"][data-cluster=%s][data-resolved-by="Resync"]')`, jsString(m1))
	if _, err := page.WaitFor(liveTimeout, timeline); err != nil {
		t.Errorf("the history timeline has no episode of %s resolved by Resync: %v; it shows:\n%s", m1, err, pageText(t, page, `table[data-testid="timeline"]`))
	}
	page.Screenshot(t, "console-history")
	noConsoleErrors(t, page, "the history page")

	// The clusters page lists both members.
	openPage(t, page, console.URL+"/clusters", true)
	for _, m := range []string{m1, m2} {
		if _, err := page.WaitFor(liveTimeout, fmt.Sprintf(`document.querySelector('tr[data-cluster=%s]')`, jsString(m))); err != nil {
			t.Errorf("the clusters page has no row for %s: %v", m, err)
		}
	}
	noConsoleErrors(t, page, "the clusters page")

	readerMayNotResync(t, browser, host, ns, resourceURL)
}

// readerMayNotResync: a user whose token may only read the CPVs, clusters
// and FederatedDeployments signs in to a console in token mode and opens
// the resource page the admin saw (adminURL, of web in ns); Resync is
// disabled with why, and a POST to the resync API is refused with the
// host's 403, leaving the federated resource as it was.
func readerMayNotResync(t *testing.T, browser *fedtest.Browser, host client.Client, ns, adminURL string) {
	admin, err := url.Parse(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	token := readOnlyToken(t, ns)
	console := startConsole(t, "--host-kubeconfig", fed.Host.Kubeconfig, "--auth", "token")
	page := browser.NewPage(t)

	// Sign in as a person would: the sign-in page, the token pasted, and
	// back to the page asked for.
	next := admin.Path + "?" + admin.RawQuery
	if err := page.Do(
		chromedp.Navigate(console.URL+"/signin?next="+url.QueryEscape(next)),
		chromedp.WaitVisible(chromedp.CSS(`form [name="token"]`)),
		chromedp.SetValue(chromedp.CSS(`form [name="token"]`), token),
		chromedp.Submit(chromedp.CSS(`form [name="token"]`)),
	); err != nil {
		t.Fatalf("signing in with the reader's token: %v", err)
	}
	resourceURL := console.URL + next
	// Signed in, the resource page renders; refused, the browser shows an
	// error page (not one of the console's, which name themselves in
	// data-page).
	const signedIn = `location.pathname === "/resource" && document.body.dataset.ready === "true" && document.body.dataset.live === "true"`
	_, err = page.WaitFor(time.Minute, signedIn+` || (document.readyState === "complete" && document.body && !document.body.dataset.page)`)
	if ok, _ := fedtest.RunPage(page, chromedp.Evaluate[bool](signedIn)); err != nil || !ok {
		html, _ := fedtest.RunPage(page, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 2000)`))
		t.Errorf("signing in on the sign-in page did not lead to the resource page (%v); the browser shows:\n%s", err, html)
		// Go on as if the sign-in had worked: with the cookie it sets.
		setCookie := chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, network.SetCookie, network.SetCookieParams{
				Name: "fedwarden-console-token", Value: token, URL: console.URL + "/", HTTPOnly: new(true), SameSite: network.CookieSameSiteStrict,
			})
			return err
		})
		if err := page.Do(setCookie); err != nil {
			t.Fatal(err)
		}
		openPage(t, page, resourceURL, true)
	}
	disabled, err := fedtest.RunPage(page, chromedp.Evaluate[bool](`(document.querySelector('button[data-testid="resync"]') || {}).disabled === true`))
	if err != nil || !disabled {
		t.Errorf("the reader's Resync button is not disabled (%v)", err)
	}
	if why := pageText(t, page, `[data-testid="resync-denied"]`); why == "" {
		t.Errorf("the reader's page does not say why Resync is disabled")
	} else {
		t.Logf("the reader's page says: %s", why)
	}
	before, _, err := federatedStatus(t.Context(), host, ns, "web")
	if err != nil {
		t.Fatal(err)
	}

	// Before the forced POST below, whose 403 the browser logs as an error.
	noConsoleErrors(t, page, "the reader's sign-in and resource pages")

	// A forced POST from the page, as the page's button would send it, with
	// the reader's cookie: the host says no.
	query := admin.Query()
	query.Del("cluster")
	answer, err := fedtest.RunPage(page, chromedp.Evaluate[string](fmt.Sprintf(
		`fetch("api/resync?" + %s, {method: "POST", headers: {"X-Fedwarden-Console": "1"}}).then(async r => r.status + " " + await r.text())`,
		jsString(query.Encode())), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("forced POST /api/resync as the reader: %s", answer)
	if !strings.HasPrefix(answer, "403 ") || !strings.Contains(answer, "forbidden") {
		t.Errorf("a forced resync by the reader got %q, want the host's 403 (forbidden)", answer)
	}
	after, _, err := federatedStatus(t.Context(), host, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if b, a := before.GetAnnotations()[typesv1beta1.AnnotationResync], after.GetAnnotations()[typesv1beta1.AnnotationResync]; a != b {
		t.Errorf("the reader's refused resync changed %s from %q to %q", typesv1beta1.AnnotationResync, b, a)
	}
}

// readOnlyToken mints a token of a ServiceAccount of namespace ns that may
// only get, list and watch CPVs, FederatedClusters and
// FederatedDeployments, fleet-wide; its rights go when the test ends.
func readOnlyToken(t *testing.T, ns string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(fed.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "console-reader", Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := "console-reader-" + ns
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"types.kubefed.io"}, Resources: []string{"clusterpropagatedversions", "federateddeployments"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"core.kubefed.io"}, Resources: []string{"federatedclusters"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if leaks != nil {
		leaks.AddSecret("the token minted (TokenRequest) for the console's reader "+ns+"/"+sa.Name, []byte(tr.Status.Token))
	}
	return tr.Status.Token
}

// withQuery returns raw with key set to value in its query.
func withQuery(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// A dead notification sink does not slow propagation: template changes
// reach a member as fast with the webhook's receiver down (a closed port
// on 127.0.0.1, every delivery failing and retried) as with it up, while
// hand edits keep the notifier busy. Only a generous bound is asserted;
// the figures are logged.
func TestNotificationSinkDownLeavesPropagationLatency(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	receiver := newCloudEventReceiver(t)
	bed, manager := startJoinedBed(t, fedtest.Options{Federation: []localfed.Option{localfed.WithMembers(1)}}, steadyProbes,
		"--notify-webhook", receiver.URL+"/hook", "--notify-attempts", "3", "--notify-timeout", "5s")
	m := bed.Fed.Members[0]
	host, member := bed.Host, bed.Members[m.Name]
	enableDeploymentsIn(t, host)
	ns := testNamespace(t, host)
	createObject(t, host, newFederatedDeployment(t, ns, "paced", 0, placedOn(m.Name)))
	createObject(t, host, newFederatedDeployment(t, ns, "churn", 0, placedOn(m.Name)))
	for _, name := range []string{"paced", "churn"} {
		waitForCPV(t, host, ns, "deployment-"+name, "1", "1", m.Name)
		waitForSettled(t, member, m.Name, ns, name)
	}

	const rounds = 5
	// measure makes rounds template changes of paced, each right after a
	// hand edit of churn (healed under Enforce, and notified), and returns
	// how long each change took to reach the member.
	round := 0
	measure := func() []time.Duration {
		var took []time.Duration
		for range rounds {
			round++
			editImage(t, member, ns, "churn", fmt.Sprintf("nginx:edit-%d", round))
			image := fmt.Sprintf("nginx:1.27-r%d", round)
			start := time.Now()
			patchFederated(t, host, ns, "paced", func(obj *unstructured.Unstructured) {
				setNested(t, obj.Object, []any{map[string]any{"name": "web", "image": image}}, "spec", "template", "spec", "template", "spec", "containers")
			})
			deadline := start.Add(time.Minute)
			for {
				img, err := memberImage(t.Context(), member, ns, "paced")
				if err == nil && img == image {
					took = append(took, time.Since(start))
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the template change to %s did not reach %s within a minute (image %q, %v)", image, m.Name, img, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			waitForImage(t, member, ns, "churn", "nginx:1.27")
		}
		return took
	}
	live := measure()
	receiver.waitFor(t, notify.Healed, ns, "churn")

	receiver.Close() // the port is closed now: every delivery is refused
	dead := measure()
	waitForCount(t, manager, "fedwarden_notifications_failed_total")

	median := func(d []time.Duration) time.Duration { return fedtest.Percentile(d, 0.5) }
	t.Logf("template change → member, receiver up: median %s, max %s %v", median(live), slices.Max(live), live)
	t.Logf("template change → member, receiver down: median %s, max %s %v", median(dead), slices.Max(dead), dead)
	// Generous: a dead sink that blocked propagation would add its
	// timeouts and backoffs (seconds per event) to every change.
	if limit := median(live) + 5*time.Second; median(dead) > limit {
		t.Errorf("with the receiver down, template changes took a median %s, more than %s (the median with it up, %s, plus 5s)", median(dead), limit, median(live))
	}
}
