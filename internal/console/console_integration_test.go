package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/console"
	"github.com/fedwarden/fedwarden/internal/scheme"
)

// startConsole serves a console on 127.0.0.1 until the test ends, and
// returns its base URL.
func startConsole(t *testing.T, opts console.Options) string {
	t.Helper()
	srv, err := console.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serving the console: %v", err)
		}
	})
	return fmt.Sprintf("http://127.0.0.1:%d/", ln.Addr().(*net.TCPAddr).Port)
}

// hostClient is an admin client of the host.
func hostClient(t *testing.T) client.Client {
	t.Helper()
	return newClient(t, fed.Host.Config)
}

// newClient returns a client of cfg that knows the Kubernetes kinds and
// Fedwarden's.
func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// call makes a request to the console and decodes a JSON answer into out
// (when not nil); it returns the response with its body read.
func call(t *testing.T, method, u string, header http.Header, out any) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, u, data, err)
		}
	}
	return res, string(data)
}

func createNamespace(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// createCPV creates a CPV of the FederatedDeployment namespace/name placed
// on clusters, and writes its status.
func createCPV(ctx context.Context, t *testing.T, c client.Client, namespace, name string, clusters []string, status typesv1beta1.ClusterPropagatedVersionStatus) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "deployment-" + name},
		Spec:       typesv1beta1.ClusterPropagatedVersionSpec{Template: name, TemplateKind: "FederatedDeployment", TemplateAPIVersion: "types.kubefed.io/v1beta1", TemplateResource: "federateddeployments"},
	}
	for _, cl := range clusters {
		cpv.Spec.Clusters = append(cpv.Spec.Clusters, typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(cl)})
	}
	if err := c.Create(ctx, cpv); err != nil {
		t.Fatal(err)
	}
	cpv.Status = status
	if err := c.Status().Update(ctx, cpv); err != nil {
		t.Fatal(err)
	}
	return cpv
}

// createFromYAML creates the object doc describes.
func createFromYAML(ctx context.Context, t *testing.T, c client.Client, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return u
}

// federatedDeployment is a FederatedDeployment of namespace %s placed on
// member-1 and the clusters that follow.
const federatedDeployment = `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: %s}
spec:
  placement: {clusters: [{name: member-1}]}
  template:
    metadata: {labels: {app: web}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.25"}]}
`

// TestFleet serves the fleet of a real host in local mode: the cells and
// counts of its CPVs, the headers of its pages, and a CPV's change on the
// live stream.
func TestFleet(t *testing.T) {
	needFederation(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host := hostClient(t)
	const ns = "fleet"
	createNamespace(ctx, t, host, ns)
	pull := &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: "fleet-edge"},
		Spec: corev1beta1.FederatedClusterSpec{APIEndpoint: "https://127.0.0.1:1", SyncMode: corev1beta1.SyncModePull}}
	if err := host.Create(ctx, pull); err != nil {
		t.Fatal(err)
	}
	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	web := createCPV(ctx, t, host, ns, "web", []string{"fleet-a", "fleet-b", "fleet-edge"}, typesv1beta1.ClusterPropagatedVersionStatus{
		TemplateVersion: "3", OverrideVersion: "1",
		ClusterVersions: []typesv1beta1.ClusterVersion{
			{ClusterName: "fleet-a", State: typesv1beta1.InSync, TemplateVersion: "3", OverrideVersion: "1"},
			{ClusterName: "fleet-b", State: typesv1beta1.ModifiedOutOfBand, TemplateVersion: "3", OverrideVersion: "1", DriftedSince: &since,
				ChangedPaths: []string{"/spec/replicas"}, ChangedBy: []string{"kubectl-edit"}},
		},
	})
	createCPV(ctx, t, host, ns, "api", []string{"fleet-a"}, typesv1beta1.ClusterPropagatedVersionStatus{
		ClusterVersions: []typesv1beta1.ClusterVersion{{ClusterName: "fleet-a", State: typesv1beta1.Missing}},
	})

	base := startConsole(t, console.Options{Host: fed.Host.Config})
	var page console.Fleet
	if res, body := call(t, http.MethodGet, base+"api/fleet?ns="+ns, nil, &page); res.StatusCode != http.StatusOK {
		t.Fatalf("GET api/fleet: %s %s", res.Status, body)
	}
	if page.Total != 2 || len(page.Rows) != 2 || page.Rows[1].ID != "FederatedDeployment/fleet/web" {
		t.Fatalf("fleet rows %+v", page.Rows)
	}
	cells := page.Rows[1].Cells
	if cells["fleet-a"].State != "InSync" || cells["fleet-b"].State != "ModifiedOutOfBand" || cells["fleet-edge"].State != console.StateWaitingForAgent ||
		cells["fleet-a"].TemplateVersion != "3" {
		t.Errorf("cells %+v", cells)
	}
	if page.Counts["InSync"] != 1 || page.Counts["ModifiedOutOfBand"] != 1 || page.Counts["Missing"] != 1 || page.Counts[console.StateWaitingForAgent] != 1 {
		t.Errorf("counts %v", page.Counts)
	}
	if len(page.Problems) > 0 {
		t.Errorf("problems %v", page.Problems)
	}

	res, body := call(t, http.MethodGet, base, nil, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `data-page="fleet"`) || !strings.Contains(body, `src="static/app.js"`) ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET /: %s, headers %v:\n%s", res.Status, res.Header, body)
	}
	for _, path := range []string{"static/app.js", "static/style.css", "favicon.ico", "resource?kind=FederatedDeployment&namespace=fleet&name=web", "clusters", "history"} {
		if res, _ := call(t, http.MethodGet, base+path, nil, nil); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, res.Status)
		}
	}
	// A page whose name resolves to 127.0.0.1 (DNS rebinding) is not served.
	req, _ := http.NewRequest(http.MethodGet, base+"api/fleet", nil)
	req.Host = "rebound.example:8800"
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a request for another host name: %v, %v; want 403", res, err)
	}
	if res, _ := call(t, http.MethodPost, base+"api/resync?kind=FederatedDeployment&namespace=fleet&name=web",
		http.Header{"Origin": {"https://attacker.example"}}, nil); res.StatusCode != http.StatusForbidden { // loopback-check: not dialed
		t.Errorf("a cross-origin resync: %s, want 403", res.Status)
	}

	checkLiveUpdate(ctx, t, host, base, web)
}

// checkLiveUpdate changes a copy's state in the CPV and checks that the
// fleet's stream carries it within 2 s.
func checkLiveUpdate(ctx context.Context, t *testing.T, host client.Client, base string, web *typesv1beta1.ClusterPropagatedVersion) {
	t.Helper()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, base+"api/events?ns=fleet", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("GET api/events: %s, %s", res.Status, ct)
	}
	events := make(chan [2]string, 100)
	go func() {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				events <- [2]string{name, strings.TrimPrefix(line, "data: ")}
			}
		}
		close(events)
	}()
	if e := <-events; e[0] != "hello" {
		t.Fatalf("the stream starts with %v, want hello", e)
	}
	web.Status.ClusterVersions[1] = typesv1beta1.ClusterVersion{ClusterName: "fleet-b", State: typesv1beta1.InSync, TemplateVersion: "3", OverrideVersion: "1"}
	if err := host.Status().Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			var row console.FleetRow
			if e[0] != "row" || json.Unmarshal([]byte(e[1]), &row) != nil || row.ID != "FederatedDeployment/fleet/web" || row.Cells["fleet-b"].State != "InSync" {
				continue
			}
			t.Logf("the change reached the stream in %v", time.Since(changed))
			return
		case <-deadline:
			t.Fatal("the CPV's change did not reach the stream within 2s")
		}
	}
}

// TestResource serves a resource's page as an admin in local mode: its
// copies, the diff with the live copy in a real member, a Pull cluster, the
// ledger, the clusters page, and a Resync that sets the annotation.
func TestResource(t *testing.T) {
	needFederation(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	host := hostClient(t)
	member := newClient(t, fed.Member("member-1").Config)
	joinMember(t)
	const ns = "shop"
	createNamespace(ctx, t, host, ns)
	createNamespace(ctx, t, member, ns)
	createFromYAML(ctx, t, host, deploymentsTypeConfig)
	createFromYAML(ctx, t, host, fmt.Sprintf(federatedDeployment, ns))
	edge := &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: "shop-edge"},
		Spec: corev1beta1.FederatedClusterSpec{APIEndpoint: "https://127.0.0.1:1", SyncMode: corev1beta1.SyncModePull}}
	if err := host.Create(ctx, edge); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(time.Now().Add(d).Truncate(time.Second)) }
	since := at(-time.Minute)
	createCPV(ctx, t, host, ns, "web", []string{"member-1", "shop-edge"}, typesv1beta1.ClusterPropagatedVersionStatus{
		TemplateVersion: "1", OverrideVersion: "1",
		ClusterVersions: []typesv1beta1.ClusterVersion{{
			ClusterName: "member-1", State: typesv1beta1.ModifiedOutOfBand, TemplateVersion: "1", OverrideVersion: "1", Version: "42", ObservedGeneration: 2,
			ChangedPaths: []string{"/spec/template/spec/containers/0/image"}, ChangedBy: []string{"kubectl-edit"}, DriftedSince: &since,
			Remediation: typesv1beta1.RemediationAlert,
			DriftHistory: []typesv1beta1.DriftEpisode{{Start: at(-time.Hour), End: at(-50 * time.Minute), State: typesv1beta1.ModifiedOutOfBand,
				ChangedBy: []string{"kubectl-scale"}, ResolvedBy: typesv1beta1.ResolvedByResync, Resync: "2026-12-01T00:00:00Z"}},
		}},
	})
	applyAs(ctx, t, member, "fedwarden", memberCopy)
	applyAs(ctx, t, member, "kubectl-edit", strings.Replace(memberCopy, "nginx:1.25", "nginx:1.26", 1))
	renewed, holder := metav1.NewMicroTime(time.Now().Add(-5*time.Second).Truncate(time.Second)), "agent-pod-0"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1beta1.DefaultFederationNamespace, Name: "fedwarden-agent-shop-edge"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renewed}}
	if err := host.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}

	// A ConfigMap that goes with web (spec.propagateDependencies).
	dep := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmap-web-config"},
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{Template: "web-config", TemplateKind: "FederatedConfigMap", TemplateAPIVersion: "types.kubefed.io/v1beta1",
			TemplateResource: "federatedconfigmaps", Clusters: []typesv1beta1.PlacedCluster{{Name: "member-1"}}, DependencyOf: []string{"FederatedDeployment/web"}},
	}
	if err := host.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	dep.Status = typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "1", OverrideVersion: "1",
		ClusterVersions: []typesv1beta1.ClusterVersion{{ClusterName: "member-1", State: typesv1beta1.InSync, TemplateVersion: "1", OverrideVersion: "1"}}}
	if err := host.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}

	base := startConsole(t, console.Options{Host: fed.Host.Config})
	id := url.Values{"kind": {"FederatedDeployment.types.kubefed.io"}, "namespace": {ns}, "name": {"web"}}
	var page console.Resource
	if res, body := call(t, http.MethodGet, base+"api/resource?"+id.Encode(), nil, &page); res.StatusCode != http.StatusOK {
		t.Fatalf("GET api/resource: %s %s", res.Status, body)
	}
	if len(page.Clusters) != 2 || page.Clusters[0].Cluster != "member-1" || page.Clusters[0].State != "ModifiedOutOfBand" ||
		page.Clusters[0].ChangedBy[0] != "kubectl-edit" || page.Clusters[0].Version != "42" || page.Clusters[1].State != console.StateWaitingForAgent {
		t.Errorf("copies %+v", page.Clusters)
	}
	if !page.ResyncAllowed || len(page.Ledger) != 2 || !page.Ledger[0].Open || page.Ledger[1].ResolvedBy != typesv1beta1.ResolvedByResync {
		t.Errorf("resync allowed %v (%s), ledger %+v", page.ResyncAllowed, page.ResyncDenied, page.Ledger)
	}
	if len(page.Dependencies) != 1 || page.Dependencies[0].Kind != "FederatedConfigMap" || page.Dependencies[0].Name != "web-config" ||
		len(page.Dependencies[0].Clusters) != 1 || page.Dependencies[0].Clusters[0].State != "InSync" {
		t.Errorf("dependencies %+v: want the ConfigMap web-config, InSync in member-1", page.Dependencies)
	}
	var depPage console.Resource
	call(t, http.MethodGet, base+"api/resource?"+url.Values{"kind": {"FederatedConfigMap"}, "namespace": {ns}, "name": {"web-config"}}.Encode(), nil, &depPage)
	if !slices.Equal(depPage.DependencyOf, []string{"FederatedDeployment/web"}) || len(depPage.Dependencies) != 0 {
		t.Errorf("the dependency's page: dependency of %v, dependencies %+v; want web's, and none", depPage.DependencyOf, depPage.Dependencies)
	}

	var diff console.Diff
	call(t, http.MethodGet, base+"api/diff?"+id.Encode()+"&cluster=member-1", nil, &diff)
	if !diff.Differs || diff.Error != "" || !hasChange(diff.Lines, "nginx:1.25", "nginx:1.26") {
		t.Errorf("diff of member-1: %+v", diff)
	}
	call(t, http.MethodGet, base+"api/diff?"+id.Encode()+"&cluster=shop-edge", nil, &diff)
	if !diff.Pull || !strings.Contains(diff.Agent, "not reported yet") {
		t.Errorf("diff of a Pull cluster: %+v", diff)
	}

	var clusters console.Clusters
	call(t, http.MethodGet, base+"api/clusters", nil, &clusters)
	found := 0
	for _, c := range clusters.Clusters {
		if c.Name == "member-1" && c.Mode == corev1beta1.SyncModePush && c.Drifted >= 1 ||
			c.Name == "shop-edge" && c.Mode == corev1beta1.SyncModePull && c.LeaseRenewed != nil && c.LeaseRenewed.Equal(&renewed) && c.LeaseHolder == holder {
			found++
		}
	}
	if found != 2 {
		t.Errorf("clusters %+v", clusters.Clusters)
	}
	var history console.History
	call(t, http.MethodGet, base+"api/history?ns="+ns, nil, &history)
	if history.Total != 1 || history.Episodes[0].Cluster != "member-1" {
		t.Errorf("history %+v", history)
	}

	var result console.ResyncResult
	res, body := call(t, http.MethodPost, base+"api/resync?"+id.Encode(), http.Header{"X-Fedwarden-Console": {"1"}}, &result)
	if res.StatusCode != http.StatusOK || result.Value == "" {
		t.Fatalf("POST api/resync: %s %s", res.Status, body)
	}
	fedObj := &unstructured.Unstructured{}
	fedObj.SetAPIVersion("types.kubefed.io/v1beta1")
	fedObj.SetKind("FederatedDeployment")
	if err := host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, fedObj); err != nil || fedObj.GetAnnotations()[typesv1beta1.AnnotationResync] != result.Value {
		t.Errorf("after a resync, the annotations are %v (%v), want %s=%s", fedObj.GetAnnotations(), err, typesv1beta1.AnnotationResync, result.Value)
	}
}

// hasChange tells whether lines change a line holding from into one
// holding to.
func hasChange(lines []console.DiffLine, from, to string) bool {
	for _, l := range lines {
		if l.Op == "change" && l.Left != nil && l.Right != nil && strings.Contains(l.Left.Text, from) && strings.Contains(l.Right.Text, to) {
			return true
		}
	}
	return false
}

// TestTokenMode serves a console that has no credentials of its own:
// requests without a token the host accepts get 401; a read-only user sees
// the fleet and is refused a resync, with the API server's words; a user
// with no rights sees nothing, and is told why.
func TestTokenMode(t *testing.T) {
	needFederation(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host := hostClient(t)
	const ns = "tokens"
	createNamespace(ctx, t, host, ns)
	createFromYAML(ctx, t, host, strings.Replace(fmt.Sprintf(federatedDeployment, ns), "placement: {clusters: [{name: member-1}]}", "placement: {clusters: []}", 1))
	createCPV(ctx, t, host, ns, "web", []string{"token-a"}, typesv1beta1.ClusterPropagatedVersionStatus{
		ClusterVersions: []typesv1beta1.ClusterVersion{{ClusterName: "token-a", State: typesv1beta1.InSync}},
	})
	reader, nobody := serviceAccountToken(ctx, t, host, ns, "reader", true), serviceAccountToken(ctx, t, host, ns, "nobody", false)

	// Where the host is and how to verify it: nothing that authenticates.
	base := startConsole(t, console.Options{Mode: console.ModeToken, Host: &rest.Config{Host: fed.Host.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: fed.Host.CAData}}})
	bearer := func(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }
	id := url.Values{"kind": {"FederatedDeployment"}, "namespace": {ns}, "name": {"web"}}

	if res, _ := call(t, http.MethodGet, base+"api/fleet", nil, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET api/fleet without a token: %s, want 401", res.Status)
	}
	if res, body := call(t, http.MethodGet, base+"?ns=tokens", nil, nil); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `action="signin"`) {
		t.Errorf("GET / without a token: %s, want 401 and the sign-in page:\n%s", res.Status, body)
	}
	if res, _ := call(t, http.MethodGet, base+"api/fleet", bearer("not-a-token"), nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET api/fleet with a bad token: %s, want 401", res.Status)
	}

	var page console.Fleet
	if res, body := call(t, http.MethodGet, base+"api/fleet?ns="+ns, bearer(reader), &page); res.StatusCode != http.StatusOK || page.Total != 1 ||
		page.Rows[0].Cells["token-a"].State != "InSync" {
		t.Errorf("the reader's fleet: %s %s", res.Status, body)
	}
	var resource console.Resource
	call(t, http.MethodGet, base+"api/resource?"+id.Encode(), bearer(reader), &resource)
	if resource.ResyncAllowed || !strings.Contains(resource.ResyncDenied, `you may not patch federateddeployments.types.kubefed.io "web" in namespace tokens`) {
		t.Errorf("the reader may resync: %v, %q", resource.ResyncAllowed, resource.ResyncDenied)
	}
	var result console.ResyncResult
	res, body := call(t, http.MethodPost, base+"api/resync?"+id.Encode(), http.Header{"Authorization": {"Bearer " + reader}, "X-Fedwarden-Console": {"1"}}, &result)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(result.Message, `cannot patch resource "federateddeployments" in API group "types.kubefed.io"`) {
		t.Errorf("the reader's resync: %s %s", res.Status, body)
	}

	call(t, http.MethodGet, base+"api/fleet?ns="+ns, bearer(nobody), &page)
	if page.Total != 0 || len(page.Problems) == 0 || !strings.Contains(page.Problems[0], "you may not list ClusterPropagatedVersions in all namespaces") {
		t.Errorf("a user with no rights sees %d resources, problems %q", page.Total, page.Problems)
	}

	checkSignIn(t, base, reader)
}

// checkSignIn signs in with the sign-in form and reads the fleet with the
// cookie it sets.
func checkSignIn(t *testing.T, base, token string) {
	t.Helper()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.PostForm(base+"signin", url.Values{"token": {"wrong"}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || strings.Contains(string(data), "wrong\"") || !strings.Contains(string(data), "does not accept this token") {
		t.Errorf("signing in with a bad token: %s\n%s", res.Status, data)
	}
	// As a browser posts the form: with the console's own origin.
	req, err := http.NewRequest(http.MethodPost, base+"signin", strings.NewReader(url.Values{"token": {token}, "next": {"/history"}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", strings.TrimSuffix(base, "/"))
	res, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cookies := res.Cookies()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/history" || len(cookies) != 1 || !cookies[0].HttpOnly ||
		cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("signing in: %s, Location %q, cookies %+v", res.Status, res.Header.Get("Location"), cookies)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"api/history", nil)
	req.AddCookie(cookies[0])
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("GET api/history with the cookie: %v, %v", res, err)
	}
}

// serviceAccountToken creates a ServiceAccount in namespace and returns a
// token of it; a reader may get, list and watch what the console reads, and
// nothing more.
func serviceAccountToken(ctx context.Context, t *testing.T, host client.Client, namespace, name string, reader bool) string {
	t.Helper()
	if err := host.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}); err != nil {
		t.Fatal(err)
	}
	if reader {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: readerBinding(namespace, name)}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"types.kubefed.io"}, Resources: []string{"clusterpropagatedversions", "federateddeployments"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"core.kubefed.io"}, Resources: []string{"federatedclusters", "federatedtypeconfigs"}, Verbs: []string{"get", "list", "watch"}},
		}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: readerBinding(namespace, name)},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}}}
		for _, obj := range []client.Object{role, binding} {
			if err := host.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	cs, err := kubernetes.NewForConfig(fed.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// readerBinding names the ClusterRole and ClusterRoleBinding that make the
// ServiceAccount namespace/name a reader.
func readerBinding(namespace, name string) string {
	return "console-test-reader-" + namespace + "-" + name
}
