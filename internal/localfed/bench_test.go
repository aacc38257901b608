package localfed

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
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

// leanIdle is how long BenchmarkLeanMember lets the member idle.
const leanIdle = 30 * time.Second

// BenchmarkLeanMember measures one member kube-apiserver, full and with
// each trim of WithLeanMembers alone and together: how long AddMember takes
// to start it (until its /readyz answers), its CPU (utime+stime) until
// then, its CPU over the next 30 s of idling, and its resident memory after
// them. Each round starts, for each variant in turn (the order rotated by
// one every round, so that no variant always comes first), a bare host (no
// CRDs, no kube-controller-manager) and adds the member to it; the figures
// are medians over the rounds.
//
//	go test ./internal/localfed/ -run '^$' -bench BenchmarkLeanMember -benchtime 5x -timeout 60m
func BenchmarkLeanMember(b *testing.B) {
	skipShort(b)
	variants := []struct {
		name  string
		trims leanTrims
	}{
		{"full", leanTrims{}},
		{"apis-off", leanTrims{apis: true}},
		{"one-proc", leanTrims{oneProc: true}},
		{"lean", leanTrims{apis: true, oneProc: true}},
	}
	samples := make([][]memberSample, len(variants))
	round := 0
	for range b.N {
		for k := range variants {
			i := (k + round) % len(variants)
			samples[i] = append(samples[i], measureMember(b, variants[i].trims))
		}
		round++
	}
	for i, v := range variants {
		b.ReportMetric(median(samples[i], func(s memberSample) float64 { return s.start.Seconds() }), v.name+"-start-s")
		b.ReportMetric(median(samples[i], func(s memberSample) float64 { return s.cpuReady }), v.name+"-CPU-to-ready-s")
		b.ReportMetric(median(samples[i], func(s memberSample) float64 { return s.cpuIdle }), v.name+"-CPU-idle-30s-s")
		b.ReportMetric(median(samples[i], func(s memberSample) float64 { return float64(s.rssKiB) / 1024 }), v.name+"-RSS-MiB")
	}
}

// median returns the median of get over samples (the upper one of an even
// count).
func median[S any](samples []S, get func(S) float64) float64 {
	values := make([]float64, len(samples))
	for i, s := range samples {
		values[i] = get(s)
	}
	slices.Sort(values)
	return values[len(values)/2]
}

// memberSample is what BenchmarkLeanMember measures of one member.
type memberSample struct {
	start             time.Duration
	cpuReady, cpuIdle float64 // core-seconds
	rssKiB            int
}

// measureMember starts a bare host, adds a member with trims, and measures
// it (BenchmarkLeanMember).
func measureMember(b *testing.B, trims leanTrims) memberSample {
	ctx := context.Background()
	fed, err := Start(ctx, WithControllers(), WithoutCRDs(), func(o *options) { o.lean = trims })
	if err != nil {
		b.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := fed.Stop(); err != nil {
			b.Fatalf("Stop: %v", err)
		}
	}()
	begin := time.Now()
	m, err := fed.AddMember(ctx, "member")
	if err != nil {
		b.Fatalf("AddMember: %v", err)
	}
	s := memberSample{start: time.Since(begin)}
	pid := m.proc.Load().pid()
	if s.cpuReady, err = cpuSeconds(pid); err != nil {
		b.Fatal(err)
	}
	time.Sleep(leanIdle)
	after, err := cpuSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	s.cpuIdle = after - s.cpuReady
	if s.rssKiB, err = vmRSS(pid); err != nil {
		b.Fatal(err)
	}
	return s
}

// clockTicks is the kernel's USER_HZ, the unit of the CPU times in
// /proc/<pid>/stat: 100 on every Linux this runs on (getconf CLK_TCK).
const clockTicks = 100

// cpuSeconds reads the CPU time (user and system) a process has used, from
// /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count the fields
	// after it. utime and stime are fields 14 and 15 of the line.
	end := strings.LastIndexByte(string(data), ')')
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat: %q", pid, data)
	}
	var ticks float64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, fmt.Errorf("reading /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return ticks / clockTicks, nil
}

// manyMembers is the size of BenchmarkStartManyMembers's beds.
const manyMembers = 20

// BenchmarkStartManyMembers starts a host and 20 members with the default
// controllers, full and lean (WithLeanMembers), in turn (the order swapped
// every round), and reports for each the time Start takes, the CPU all
// the bed's processes used until it returned (utime+stime: the start's
// cost on a machine of few cores), their resident memory then, and a
// member kube-apiserver's; medians over the rounds.
//
//	go test ./internal/localfed/ -run '^$' -bench BenchmarkStartManyMembers -benchtime 2x -timeout 60m
func BenchmarkStartManyMembers(b *testing.B) {
	skipShort(b)
	variants := []struct {
		name string
		opts []Option
	}{
		{"full", nil},
		{"lean", []Option{WithLeanMembers()}},
	}
	samples := make([][]bedSample, len(variants))
	round := 0
	for range b.N {
		for k := range variants {
			i := (k + round) % len(variants)
			opts := append([]Option{WithMembers(manyMembers), WithStartTimeout(3 * time.Minute)}, variants[i].opts...)
			samples[i] = append(samples[i], measureBed(b, opts))
		}
		round++
	}
	for i, v := range variants {
		b.ReportMetric(median(samples[i], func(s bedSample) float64 { return s.start.Seconds() }), v.name+"-s/start")
		b.ReportMetric(median(samples[i], func(s bedSample) float64 { return s.cpu }), v.name+"-CPU-s")
		b.ReportMetric(median(samples[i], func(s bedSample) float64 { return float64(s.rssKiB) / 1024 }), v.name+"-RSS-MiB")
		b.ReportMetric(median(samples[i], func(s bedSample) float64 { return float64(s.memberRSSKiB) / 1024 }), v.name+"-member-apiserver-RSS-MiB")
	}
}

// bedSample is what BenchmarkStartManyMembers measures of one bed.
type bedSample struct {
	start                time.Duration
	cpu                  float64 // core-seconds, every process of the bed
	rssKiB, memberRSSKiB int     // every process; a member's kube-apiserver, the median
}

// measureBed starts a federation with opts, measures it and stops it.
func measureBed(b *testing.B, opts []Option) bedSample {
	begin := time.Now()
	fed, err := Start(context.Background(), opts...)
	if err != nil {
		b.Fatalf("Start: %v", err)
	}
	s := bedSample{start: time.Since(begin)}
	for _, pid := range fed.pids() {
		cpu, err := cpuSeconds(pid)
		if err != nil {
			b.Fatal(err)
		}
		rss, err := vmRSS(pid)
		if err != nil {
			b.Fatal(err)
		}
		s.cpu += cpu
		s.rssKiB += rss
	}
	var members []int
	for _, m := range fed.Members {
		rss, err := vmRSS(m.proc.Load().pid())
		if err != nil {
			b.Fatal(err)
		}
		members = append(members, rss)
	}
	s.memberRSSKiB = int(median(members, func(kib int) float64 { return float64(kib) }))
	if err := fed.Stop(); err != nil {
		b.Fatalf("Stop: %v", err)
	}
	return s
}
