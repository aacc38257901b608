package bulk

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/fedwarden/fedwarden/test/fedtest"
)

// processMemory is the resident memory of the processes a benchmark
// started, the bed's and the controller's: every descendant of the test
// binary, read from /proc.
type processMemory struct {
	// rss and peak sum VmRSS and VmHWM, in KiB (the peaks were not
	// reached at the same time: their sum is an upper bound).
	rss, peak int64
	// programs holds VmRSS in KiB and the count of processes, by program
	// name (/proc/<pid>/comm, at most 15 bytes: kube-controller-manager is
	// "kube-controller").
	programs map[string]programMemory
}

type programMemory struct {
	rss   int64
	count int
}

// descendantsMemory reads the memory of every process descending from this
// one.
func descendantsMemory() (processMemory, error) {
	parents, err := parentsByPID()
	if err != nil {
		return processMemory{}, err
	}
	children := map[int][]int{}
	for pid, ppid := range parents {
		children[ppid] = append(children[ppid], pid)
	}
	m := processMemory{programs: map[string]programMemory{}}
	queue := children[os.Getpid()]
	for len(queue) > 0 {
		pid := queue[0]
		queue = append(queue[1:], children[pid]...)
		rss, peak, err := fedtest.ProcessMemory(pid)
		if err != nil {
			continue // it has exited since
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		m.rss, m.peak = m.rss+rss, m.peak+peak
		p := m.programs[name]
		m.programs[name] = programMemory{rss: p.rss + rss, count: p.count + 1}
	}
	return m, nil
}

// parentsByPID maps each process to its parent, from /proc/<pid>/stat.
func parentsByPID() (map[int]int, error) {
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	parents := make(map[int]int, len(paths))
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // it has exited since
		}
		// The command name, in parentheses, may hold spaces; the state
		// and the parent's id follow it.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		pid, err1 := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		ppid, err2 := strconv.Atoi(fields[1])
		if err1 == nil && err2 == nil {
			parents[pid] = ppid
		}
	}
	if len(parents) == 0 {
		return nil, fmt.Errorf("no process found in /proc")
	}
	return parents, nil
}

// String lists the total and each program's share, largest first.
func (m processMemory) String() string {
	mib := func(kib int64) string { return fmt.Sprintf("%.0f MiB", float64(kib)/1024) }
	parts := []string{fmt.Sprintf("%s in all (sum of peaks %s)", mib(m.rss), mib(m.peak))}
	names := make([]string, 0, len(m.programs))
	for name := range m.programs {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(m.programs[b].rss, m.programs[a].rss) })
	for _, name := range names {
		p := m.programs[name]
		parts = append(parts, fmt.Sprintf("%s × %d: %s", name, p.count, mib(p.rss)))
	}
	return strings.Join(parts, "; ")
}
