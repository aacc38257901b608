package localfed

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStart measures how long Start takes and the resident memory of
// every process once it returned: for a host and three members with the
// default controllers, and, as the baseline from the same run, for a bare
// host (one etcd and one kube-apiserver, no controller-manager).
//
//	go test ./internal/localfed/ -run '^$' -bench BenchmarkStart -benchtime 3x
func BenchmarkStart(b *testing.B) {
	skipShort(b)
	b.Run("baseline-host-only", func(b *testing.B) { benchmarkStart(b, WithControllers()) })
	b.Run("host+3-members", func(b *testing.B) { benchmarkStart(b, WithMembers(3)) })
}

func benchmarkStart(b *testing.B, opts ...Option) {
	rss := map[string]float64{}
	var total time.Duration
	for range b.N {
		begin := time.Now()
		fed, err := Start(context.Background(), opts...)
		if err != nil {
			b.Fatalf("Start: %v", err)
		}
		total += time.Since(begin)
		b.StopTimer()
		for name, kib := range processRSS(b, fed) {
			rss[name] += float64(kib) / 1024
		}
		if err := fed.Stop(); err != nil {
			b.Fatalf("Stop: %v", err)
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/start")
	for name, mib := range rss {
		b.ReportMetric(mib/float64(b.N), name+"-RSS-MiB")
	}
}

// processRSS returns the resident memory, in KiB, of each process of fed,
// named etcd or after its cluster and component.
func processRSS(b *testing.B, fed *Federation) map[string]int {
	b.Helper()
	pids := map[string]int{"etcd": fed.etcd.proc.pid()}
	for _, c := range fed.Clusters() {
		pids[c.Name+"-apiserver"] = c.proc.Load().pid()
		if c.cm != nil {
			pids[c.Name+"-controller-manager"] = c.cm.pid()
		}
	}
	rss := map[string]int{}
	for name, pid := range pids {
		kib, err := vmRSS(pid)
		if err != nil {
			b.Fatalf("RSS of %s: %v", name, err)
		}
		rss[name] = kib
	}
	return rss
}

// vmRSS reads VmRSS, in KiB, from /proc/<pid>/status.
func vmRSS(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if value, ok := strings.CutPrefix(scanner.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(value), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
