package bulk

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/test/fedtest"
)

// queueMetrics are the controller metrics that tell where a resource
// waits after a bulk: in the work queue, in retries, or in the client's
// rate limiter.
var queueMetrics = []string{
	"workqueue_depth",
	"workqueue_queue_duration_seconds",
	"workqueue_work_duration_seconds",
	"workqueue_retries_total",
	"rest_client_rate_limiter_duration_seconds",
	"controller_runtime_reconcile_total",
}

// logQueueMetrics scrapes a controller's metrics endpoint and logs the
// queueMetrics: counters and gauges by series (zeros left out), histograms
// as count, mean and how many took longer than each bucket bound from
// 0.1 s on.
func logQueueMetrics(b *testing.B, title, url string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Errorf("scraping %s: %v", url, err)
		return
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Errorf("parsing %s: %v", url, err)
		return
	}
	var lines []string
	for _, name := range queueMetrics {
		f := families[name]
		if f == nil {
			lines = append(lines, name+": not exported")
			continue
		}
		for _, m := range f.GetMetric() {
			if line := metricLine(name, m); line != "" {
				lines = append(lines, line)
			}
		}
	}
	logf("%s: controller metrics\n%s", title, strings.Join(lines, "\n"))
}

func metricLine(name string, m *dto.Metric) string {
	var labels []string
	for _, l := range m.GetLabel() {
		labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	series := name + "{" + strings.Join(labels, ",") + "}"
	switch {
	case m.Histogram != nil:
		h := m.GetHistogram()
		n := h.GetSampleCount()
		if n == 0 {
			return ""
		}
		line := fmt.Sprintf("%s count=%d mean=%.3fs", series, n, h.GetSampleSum()/float64(n))
		for _, bk := range h.GetBucket() {
			if le := bk.GetUpperBound(); le >= 0.1 && !math.IsInf(le, 1) && bk.GetCumulativeCount() < n {
				line += fmt.Sprintf(" >%gs=%d", le, n-bk.GetCumulativeCount())
			}
		}
		return line
	case m.Counter != nil && m.GetCounter().GetValue() != 0:
		return fmt.Sprintf("%s %g", series, m.GetCounter().GetValue())
	case m.Gauge != nil && m.GetGauge().GetValue() != 0:
		return fmt.Sprintf("%s %g", series, m.GetGauge().GetValue())
	}
	return ""
}

// hostProfiles takes CPU profiles of the host API server, one after
// another, until stopped: together they cover the bulk.
type hostProfiles struct {
	dir     string
	stopped atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	files   []string
	err     error
}

// profileSeconds is the length of each profile.
const profileSeconds = "3"

func profileHost(host kubernetes.Interface, dir string) *hostProfiles {
	hp := &hostProfiles{dir: dir}
	hp.wg.Go(func() {
		for i := 0; !hp.stopped.Load(); i++ {
			data, err := host.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", profileSeconds).DoRaw(context.Background())
			if err == nil {
				path := filepath.Join(dir, fmt.Sprintf("host-apiserver-cpu-%03d.pprof", i))
				err = os.WriteFile(path, data, 0o600)
				hp.mu.Lock()
				hp.files = append(hp.files, path)
				hp.mu.Unlock()
			}
			if err != nil {
				hp.mu.Lock()
				hp.err = err
				hp.mu.Unlock()
				return
			}
		}
	})
	return hp
}

// stop ends the profiling after the profile under way.
func (hp *hostProfiles) stop() { hp.stopped.Store(true) }

// report waits for the last profile and logs the top 15 entries of them
// all, by cumulative time.
func (hp *hostProfiles) report(b *testing.B) {
	hp.wg.Wait()
	if hp.err != nil {
		b.Errorf("profiling the host API server: %v", hp.err)
		return
	}
	files := slices.Clone(hp.files)
	sort.Strings(files)
	out, err := exec.Command("go", append([]string{"tool", "pprof", "-top", "-cum", "-nodecount=15"}, files...)...).CombinedOutput()
	if err != nil {
		b.Errorf("go tool pprof: %v\n%s", err, out)
		return
	}
	logf("host kube-apiserver CPU over Fedwarden's bulk (%d profiles of %s s in %s):\n%s", len(files), profileSeconds, hp.dir, out)
}

// logHeap saves the heap profile url serves (a controller's
// --pprof-bind-address) as file in dir and logs its top 20 entries by the memory
// in use, so that what holds the controller's memory can be named.
func logHeap(b *testing.B, title, url, dir, file string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Errorf("reading the heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Errorf("reading the heap profile: %v (HTTP %d)", err, resp.StatusCode)
		return
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Error(err)
		return
	}
	for _, view := range []string{"-top", "-top -cum"} {
		args := append([]string{"tool", "pprof"}, strings.Fields(view)...)
		out, err := exec.Command("go", append(args, "-sample_index=inuse_space", "-nodecount=25", path)...).CombinedOutput()
		if err != nil {
			b.Errorf("go tool pprof: %v\n%s", err, out)
			return
		}
		logf("%s, %s (%s):\n%s", title, view, path, out)
	}
}

// settledHeap makes the controller-manager collect its garbage (its heap
// profile, pprofURL, with gc=1, saved in dir and logged) and returns its
// live heap then, in MiB (go_memstats_heap_alloc_bytes): what its caches
// and queues hold once the work is done, without the garbage a heap profile
// taken in the middle of the work also counts, and without the samples'
// error.
func settledHeap(b *testing.B, pprofURL, dir string, cm *fedtest.ControllerManager) float64 {
	logHeap(b, "Fedwarden's controller-manager heap once settled, after a garbage collection", pprofURL+"?gc=1", dir, "controller-heap-settled.pprof")
	heap, found, err := cm.Metric(context.Background(), "go_memstats_heap_alloc_bytes")
	if err != nil || !found {
		b.Fatalf("reading go_memstats_heap_alloc_bytes: found %t, %v", found, err)
	}
	return heap / (1 << 20)
}
