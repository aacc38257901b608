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
	pids, err := processTree()
	if err != nil {
		return processMemory{}, err
	}
	m := processMemory{programs: map[string]programMemory{}}
	for _, pid := range pids[1:] {
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

// processTree returns this process and every process descending from it,
// this one first.
func processTree() ([]int, error) {
	parents, err := parentsByPID()
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for pid, ppid := range parents {
		children[ppid] = append(children[ppid], pid)
	}
	tree := []int{os.Getpid()}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree, nil
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

// clockTicks is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux Go supports.
const clockTicks = 100

// cpuTimes are the CPU-seconds (user and system) each process descending
// from this one, and this one, had used when read, by pid, with each
// process's label.
type cpuTimes struct {
	seconds map[int]float64
	labels  map[int]string
}

// readCPU reads the CPU time of this process and of every descendant. The
// host kube-apiserver (hostPID) and the controller (controllerPIDs) are
// labelled apart from the members' API servers and any other process of
// the same program.
func readCPU(hostPID int, controllerPIDs ...int) (cpuTimes, error) {
	pids, err := processTree()
	if err != nil {
		return cpuTimes{}, err
	}
	t := cpuTimes{seconds: map[int]float64{}, labels: map[int]string{}}
	self := os.Getpid()
	for _, pid := range pids {
		secs, name, err := processCPU(pid)
		if err != nil {
			continue // it has exited since
		}
		switch {
		case pid == self:
			name = "the benchmark (clients, watches)"
		case pid == hostPID:
			name = "host kube-apiserver"
		case slices.Contains(controllerPIDs, pid):
			name = "controller"
		case name == "kube-apiserver":
			name = "member kube-apiservers"
		}
		t.seconds[pid], t.labels[pid] = secs, name
	}
	return t, nil
}

// processCPU reads a process's user and system CPU-seconds and its program
// name from /proc/<pid>/stat.
func processCPU(pid int) (float64, string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return 0, "", fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	// After the name: state (field 3) … utime (14) and stime (15).
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 13 {
		return 0, "", fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, "", fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return float64(utime+stime) / clockTicks, s[open+1 : closing], nil
}

// cpuUse is the CPU-seconds each label's processes used between two reads.
type cpuUse map[string]float64

// since is the CPU each label used from before to t. A process started
// in between counts from zero; one gone by t is not counted.
func (t cpuTimes) since(before cpuTimes) cpuUse {
	use := cpuUse{}
	for pid, secs := range t.seconds {
		use[t.labels[pid]] += secs - before.seconds[pid]
	}
	return use
}

// String lists the total and each label's CPU-seconds, largest first, and
// the cores they kept busy over wall.
func (u cpuUse) String(wall float64) string {
	var total float64
	labels := make([]string, 0, len(u))
	for label, secs := range u {
		total += secs
		labels = append(labels, label)
	}
	slices.SortFunc(labels, func(a, b string) int { return cmp.Compare(u[b], u[a]) })
	parts := []string{fmt.Sprintf("%.1f CPU-s in all over %.1f s (%.2f cores)", total, wall, total/wall)}
	for _, label := range labels {
		parts = append(parts, fmt.Sprintf("%s %.1f", label, u[label]))
	}
	return strings.Join(parts, "; ")
}
