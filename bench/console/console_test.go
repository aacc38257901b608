// Package console measures the web console at fleet size: the server time
// of the fleet page, with and without filters, over 10,000 federated
// resources × 10 member clusters, and the resident memory of the console
// process serving them. Results and the command that reproduces them are in
// bench/RESULTS.md.
package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

const (
	// resources is how many federated resources (CPVs) the fleet has;
	// smokeResources in a smoke test.
	resources, smokeResources = 10000, 200
	// clusters is how many member clusters each is placed on.
	clusters = 10
	// namespaces the resources are spread over.
	namespaces = 20
	// writers write the CPVs at the same time.
	writers = 16
	// rounds is how many times each query is asked.
	rounds = 40
)

// queries are the fleet pages asked, as a user would filter them.
var queries = []string{
	"",
	"page=50",
	"ns=ns-07",
	"state=ModifiedOutOfBand",
	"state=Drifted&cluster=c-03",
	"q=web-123",
	"kind=FederatedDeployment&state=InSync&page=3",
	"ns=ns-01,ns-02&cluster=c-00,c-09&size=500",
}

// fleetPage is what the benchmark reads of an answer of /api/fleet.
type fleetPage struct {
	Total  int            `json:"total"`
	Counts map[string]int `json:"counts"`
	Rows   []struct {
		ID string `json:"id"`
	} `json:"rows"`
}

// BenchmarkFleetPage writes the CPVs of a fleet (with their status, as the
// controller would) to a real host, starts `fedwarden console` against it
// as a process, waits until it has them all, then asks each query rounds
// times and reports the server time (the console's Server-Timing) at p50
// and p99, and the process's RSS.
func BenchmarkFleetPage(b *testing.B) {
	ctrllog.SetLogger(logr.Discard())
	n := fedtest.BenchN(b, resources, smokeResources)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	fb := fedtest.StartBed(b, fedtest.Options{Federation: []localfed.Option{localfed.WithMembers(0), localfed.WithControllers()}, Unthrottled: true})
	f, host := fb.Fed, fb.Host
	written := writeFleet(ctx, b, host, n)
	b.Logf("wrote %d CPVs × %d clusters in %v", n, clusters, written)

	bin, err := fedtest.Build(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	base, pid := startConsole(b, bin, f)
	started := time.Now()
	first := waitFleet(ctx, b, base, n)
	b.Logf("the console had every CPV %v after it started", time.Since(started))
	if sum := sumCounts(first.Counts); sum != n*clusters {
		b.Fatalf("the counts add up to %d copies, want %d", sum, n*clusters)
	}
	if first.Counts["ModifiedOutOfBand"] == 0 || first.Counts["Missing"] == 0 {
		b.Fatalf("counts %v lack the drifted copies written", first.Counts)
	}

	b.ResetTimer()
	var server, roundTrip []time.Duration
	for range b.N {
		for range rounds {
			for _, q := range queries {
				s, rt := ask(ctx, b, base, q)
				server, roundTrip = append(server, s), append(roundTrip, rt)
			}
		}
	}
	b.StopTimer()
	rss, peak, err := fedtest.ProcessMemory(pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(fedtest.Percentile(server, 0.5)), "server-p50-ms")
	b.ReportMetric(ms(fedtest.Percentile(server, 0.99)), "server-p99-ms")
	b.ReportMetric(ms(fedtest.Percentile(roundTrip, 0.99)), "roundtrip-p99-ms")
	b.ReportMetric(float64(rss)/1024, "rss-MiB")
	b.ReportMetric(float64(peak)/1024, "peak-rss-MiB")
	perQuery(b, server)
}

// perQuery logs the p50 and p99 of each query.
func perQuery(b *testing.B, server []time.Duration) {
	for i, q := range queries {
		var d []time.Duration
		for j := i; j < len(server); j += len(queries) {
			d = append(d, server[j])
		}
		b.Logf("%-48q p50 %6.1f ms  p99 %6.1f ms", q, ms(fedtest.Percentile(d, 0.5)), ms(fedtest.Percentile(d, 0.99)))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func sumCounts(counts map[string]int) int {
	sum := 0
	for _, n := range counts {
		sum += n
	}
	return sum
}

// state is the state of resource i's copy in cluster j: about one copy in
// 50 edited out of band, one in 97 missing, the others in sync.
func state(i, j int) typesv1beta1.DriftState {
	switch k := i*7 + j; {
	case k%50 == 0:
		return typesv1beta1.ModifiedOutOfBand
	case k%97 == 1:
		return typesv1beta1.Missing
	default:
		return typesv1beta1.InSync
	}
}

// writeFleet creates the FederatedClusters, namespaces and n CPVs placed
// on every cluster, each with its status, and returns how long it took.
func writeFleet(ctx context.Context, b *testing.B, host client.Client, n int) time.Duration {
	start := time.Now()
	for j := range clusters {
		fc := &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%02d", j)}, Spec: corev1beta1.FederatedClusterSpec{
			APIEndpoint: "https://127.0.0.1:1", SecretRef: &corev1beta1.LocalSecretReference{Name: "none"}, Region: "r" + strconv.Itoa(j%3)}}
		if err := host.Create(ctx, fc); err != nil {
			b.Fatal(err)
		}
	}
	for k := range namespaces {
		if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%02d", k)}}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := writeCPV(ctx, host, i, &since); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func writeCPV(ctx context.Context, host client.Client, i int, since *metav1.Time) error {
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%02d", i%namespaces), Name: fmt.Sprintf("deployment-web-%d", i)},
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{Template: fmt.Sprintf("web-%d", i), TemplateKind: "FederatedDeployment",
			TemplateAPIVersion: "types.kubefed.io/v1beta1", TemplateResource: "federateddeployments"},
	}
	status := typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "2", OverrideVersion: "1", TemplateHash: "sha256:" + strings.Repeat("ab", 32),
		OverrideHash: "sha256:" + strings.Repeat("cd", 32), Conditions: conditions(*since)}
	for j := range clusters {
		name := typesv1beta1.ClusterName(fmt.Sprintf("c-%02d", j))
		cpv.Spec.Clusters = append(cpv.Spec.Clusters, typesv1beta1.PlacedCluster{Name: name})
		cv := typesv1beta1.ClusterVersion{ClusterName: name, State: state(i, j), TemplateVersion: "2", OverrideVersion: "1",
			Version: strconv.Itoa(1000 + i), ObservedGeneration: 2, Remediation: typesv1beta1.RemediationEnforce}
		if cv.State != typesv1beta1.InSync {
			cv.DriftedSince, cv.ChangedPaths, cv.ChangedBy = since, []string{"/spec/template/spec/containers/0/image"}, []string{"kubectl-edit"}
		}
		status.ClusterVersions = append(status.ClusterVersions, cv)
	}
	if err := host.Create(ctx, cpv); err != nil {
		return fmt.Errorf("creating CPV %d: %w", i, err)
	}
	cpv.Status = status
	if err := host.Status().Update(ctx, cpv); err != nil {
		return fmt.Errorf("writing the status of CPV %d: %w", i, err)
	}
	return nil
}

// conditions are the Propagated and Drifted conditions the controller
// writes, which the console's cache drops.
func conditions(at metav1.Time) []metav1.Condition {
	return []metav1.Condition{
		{Type: typesv1beta1.CPVPropagated, Status: metav1.ConditionTrue, Reason: "Propagated", Message: "every cluster has the current template and override versions", LastTransitionTime: at},
		{Type: typesv1beta1.CPVDrifted, Status: metav1.ConditionFalse, Reason: typesv1beta1.ReasonAllInSync, Message: "every cluster is InSync", LastTransitionTime: at},
	}
}

// startConsole runs `fedwarden console` against f's host on a free port of
// 127.0.0.1 until the benchmark ends, and returns its URL and process id.
func startConsole(b *testing.B, bin string, f *localfed.Federation) (string, int) {
	port, err := fedtest.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "console", "--host-kubeconfig", f.Host.Kubeconfig, "--address", fmt.Sprintf("127.0.0.1:%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "Fedwarden console: ") {
		b.Fatalf("the console printed %q: %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return fmt.Sprintf("http://127.0.0.1:%d/", port), cmd.Process.Pid
}

// waitFleet asks the unfiltered fleet until it has n resources.
func waitFleet(ctx context.Context, b *testing.B, base string, n int) fleetPage {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var page fleetPage
		if err := get(ctx, base+"api/fleet", &page, nil); err == nil && page.Total == n {
			return page
		}
		if time.Now().After(deadline) {
			b.Fatalf("the console does not have the %d resources after 5 minutes (it has %d)", n, page.Total)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ask asks one fleet page and returns the console's server time and the
// round trip.
func ask(ctx context.Context, b *testing.B, base, q string) (server, roundTrip time.Duration) {
	var page fleetPage
	var header http.Header
	start := time.Now()
	if err := get(ctx, base+"api/fleet?"+q, &page, &header); err != nil {
		b.Fatal(err)
	}
	roundTrip = time.Since(start)
	timing := header.Get("Server-Timing")
	v, ok := strings.CutPrefix(timing, "fleet;dur=")
	f, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil {
		b.Fatalf("Server-Timing %q", timing)
	}
	if q == "" && len(page.Rows) != 100 {
		b.Fatalf("the first page has %d rows, want 100", len(page.Rows))
	}
	return time.Duration(f * float64(time.Millisecond)), roundTrip
}

func get(ctx context.Context, u string, out any, header *http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, res.Status)
	}
	if header != nil {
		*header = res.Header
	}
	return json.NewDecoder(res.Body).Decode(out)
}
