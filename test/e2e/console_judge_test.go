package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// TestConsoleWaivesAndCodifies: on the resource page, in Chromium, a copy
// scaled by hand under Alert is waived (Waive, with a reason: the CPV entry
// turns Waived and the resource holds the waiver) and then codified
// (Codify: the resource gains the cluster's override, the entry turns
// InSync and the member keeps its scale), as the signed-in user, with no
// console error.
func TestConsoleWaivesAndCodifies(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	s := newScaleTarget(t, host, fed.Members[0].Name, fed.Members[0].Config)
	const name = "judged"
	s.place(t, name, "\n  driftPolicy: {remediation: Alert}")
	s.scale(t, name, 2)
	waitForEntry(t, host, s.namespace, "deployment-"+name, s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.ModifiedOutOfBand
	})

	console := startConsole(t, "--host-kubeconfig", fed.Host.Kubeconfig)
	page := fedtest.StartBrowser(t).NewPage(t)
	q := url.Values{"kind": {"FederatedDeployment.types.kubefed.io"}, "namespace": {s.namespace}, "name": {name}, "cluster": {s.cluster}}
	openPage(t, page, console.URL+"/resource?"+q.Encode(), true)
	state := fmt.Sprintf(`[data-testid="cluster-%s"] [data-testid="state"]`, s.cluster)
	result := `(e => e && !e.hidden && e.dataset.ok ? e.dataset.ok + " " + e.textContent : "")(document.querySelector('[data-testid="judge-result"]'))`

	// Waive, for an hour, with a reason.
	if err := page.Do(
		chromedp.WaitEnabled(chromedp.CSS(`button[data-testid="waive"]`)),
		chromedp.SetValue(chromedp.CSS(`input[data-testid="waive-for"]`), "1h"),
		chromedp.SetValue(chromedp.CSS(`input[data-testid="waive-reason"]`), "load test"),
		chromedp.Click(chromedp.CSS(`button[data-testid="waive"]`)),
	); err != nil {
		t.Fatalf("waiving: %v", err)
	}
	if _, err := page.WaitFor(30*time.Second, result+` !== ""`); err != nil {
		t.Fatalf("no result shown after Waive: %v", err)
	}
	// The answer comes once the controller-manager has taken the waiver up,
	// and says so.
	if got := pageText(t, page, `[data-testid="judge-result"]`); !strings.HasPrefix(got, "waived "+replicasPath+" in "+s.cluster+" until ") ||
		!strings.HasSuffix(got, ": the controller-manager has taken it up") {
		t.Errorf("Waive answered %q", got)
	}
	if _, err := page.WaitFor(liveTimeout, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "Waived"`, jsString(state))); err != nil {
		t.Errorf("the page shows %s's state as %q after Waive, want Waived: %v", s.cluster, pageText(t, page, state), err)
	}
	if got := waiversOf(t, s.namespace, name); !strings.Contains(got, `"reason":"load test"`) || !strings.Contains(got, `"paths":["/spec/replicas"]`) {
		t.Errorf("the resource's waivers after Waive: %s", got)
	}

	// Codify: the scale becomes the cluster's override.
	if err := page.Do(chromedp.WaitEnabled(chromedp.CSS(`button[data-testid="codify"]`)), chromedp.Click(chromedp.CSS(`button[data-testid="codify"]`))); err != nil {
		t.Fatalf("codifying: %v", err)
	}
	if _, err := page.WaitFor(30*time.Second, result+`.startsWith("true codified")`); err != nil {
		t.Fatalf("Codify answered %q: %v", pageText(t, page, `[data-testid="judge-result"]`), err)
	}
	if got, want := overridesOf(t, s.namespace, name), `[{"clusterName":"`+s.cluster+`","clusterOverrides":[{"op":"replace","path":"/spec/replicas","value":2}]}]`; got != want {
		t.Errorf("spec.overrides after Codify = %s, want %s", got, want)
	}
	waitForEntry(t, host, s.namespace, "deployment-"+name, s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.InSync && cv.OverrideVersion == "2"
	})
	poll.Eventually(t, settleWithin, "the member's scale kept", func(ctx context.Context) (bool, string) {
		n, err := s.replicas(ctx, name)
		return err == nil && n == 2, fmt.Sprint(n, err)
	})
	if _, err := page.WaitFor(liveTimeout, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "InSync"`, jsString(state))); err != nil {
		t.Errorf("the page shows %s's state as %q after Codify, want InSync: %v", s.cluster, pageText(t, page, state), err)
	}
	noConsoleErrors(t, page, "the resource page, after Waive and Codify")
}

// waiversOf is the spec.driftPolicy.waivers of a FederatedDeployment as
// JSON, "" when it has none.
func waiversOf(t *testing.T, namespace, name string) string {
	t.Helper()
	return nestedJSON(t, namespace, name, "spec", "driftPolicy", "waivers")
}
