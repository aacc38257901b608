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

// cpuProfiles takes CPU profiles of one process, one after another, until
// stopped: together they cover the bulk.
type cpuProfiles struct {
	// name says whose profiles they are; prefix begins their files' names.
	name, prefix string
	dir          string
	stopped      atomic.Bool
	wg           sync.WaitGroup
	mu           sync.Mutex
	files        []string
	err          error
}

// profileSeconds is the length of each profile.
const profileSeconds = "3"

// profileHost profiles the host API server, through its
// /debug/pprof/profile and the admin client.
func profileHost(host kubernetes.Interface, dir string) *cpuProfiles {
	return profile("host kube-apiserver", "host-apiserver-cpu", dir, func() ([]byte, error) {
		return host.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", profileSeconds).DoRaw(context.Background())
	})
}

// profileController profiles a controller-manager through its
// --pprof-bind-address, whose base URL (ending in /debug/pprof) is
// pprofURL.
func profileController(pprofURL, dir string) *cpuProfiles {
	return profile("Fedwarden's controller-manager", "controller-cpu", dir, func() ([]byte, error) {
		resp, err := http.Get(pprofURL + "/profile?seconds=" + profileSeconds)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
		}
		return data, err
	})
}

func profile(name, prefix, dir string, fetch func() ([]byte, error)) *cpuProfiles {
	cp := &cpuProfiles{name: name, prefix: prefix, dir: dir}
	cp.wg.Go(func() {
		for i := 0; !cp.stopped.Load(); i++ {
			data, err := fetch()
			if err == nil {
				path := filepath.Join(dir, fmt.Sprintf("%s-%03d.pprof", prefix, i))
				err = os.WriteFile(path, data, 0o600)
				cp.mu.Lock()
				cp.files = append(cp.files, path)
				cp.mu.Unlock()
			}
			if err != nil {
				cp.mu.Lock()
				cp.err = err
				cp.mu.Unlock()
				return
			}
		}
	})
	return cp
}

// stop ends the profiling after the profile under way.
func (cp *cpuProfiles) stop() { cp.stopped.Store(true) }

// report waits for the last profile and logs the top entries of them all,
// by cumulative time.
func (cp *cpuProfiles) report(b *testing.B) {
	cp.wg.Wait()
	if cp.err != nil {
		b.Errorf("profiling %s: %v", cp.name, cp.err)
		return
	}
	files := slices.Clone(cp.files)
	sort.Strings(files)
	out, err := exec.Command("go", append([]string{"tool", "pprof", "-top", "-cum", "-nodecount=25"}, files...)...).CombinedOutput()
	if err != nil {
		b.Errorf("go tool pprof: %v\n%s", err, out)
		return
	}
	logf("%s: CPU over Fedwarden's bulk (%d profiles of %s s in %s):\n%s", cp.name, len(files), profileSeconds, cp.dir, out)
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
