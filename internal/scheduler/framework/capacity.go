package framework

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Capacity is a cluster's free room for a workload in one namespace. The
// room the workload's own pods hold there counts as free: it is theirs
// whatever is decided, so a cluster the workload already fills is never
// found too small for it.
type Capacity struct {
	// Free is allocatable minus the requests of the pods bound there, summed
	// over the Ready, schedulable Nodes; keys are resource names (cpu,
	// memory, pods, …).
	Free corev1.ResourceList
	// QuotaFree is hard minus used of the namespace's ResourceQuotas, the
	// tightest quota per resource, keyed by cpu, memory and pods (quotas on
	// requests.cpu count as cpu); nil when the namespace has no quota.
	QuotaFree corev1.ResourceList
}

// Shortfall says why n more pods that each request perPod do not fit.
type Shortfall struct {
	// Resource is the first resource that does not fit, and Source where
	// it falls short: "nodes" or "quota".
	Resource corev1.ResourceName
	Source   string
	Need     resource.Quantity
	Free     resource.Quantity
}

func (s Shortfall) String() string {
	what := "free"
	if s.Source == "quota" {
		what = "left in the namespace's ResourceQuota"
	}
	unit := string(s.Resource)
	if s.Resource == corev1.ResourcePods && s.Need.Value() == 1 {
		unit = "pod"
	}
	return fmt.Sprintf("needs %s %s, %s %s", formatQuantity(s.Need, s.Resource, true), unit, formatQuantity(s.Free, s.Resource, false), what)
}

// MaxPods is how many more pods requesting perPod fit; math.MaxInt64 when
// nothing limits them. A pod always counts against "pods".
func (c *Capacity) MaxPods(perPod corev1.ResourceList) int64 {
	most := int64(math.MaxInt64)
	for _, list := range []corev1.ResourceList{c.Free, c.QuotaFree} {
		for _, name := range requested(perPod) {
			free, ok := list[name]
			if !ok {
				continue
			}
			most = min(most, fits(free, request(perPod, name)))
		}
	}
	return max(most, 0)
}

// Fit tells whether n more pods requesting perPod fit, and if not, why.
func (c *Capacity) Fit(perPod corev1.ResourceList, n int64) (bool, Shortfall) {
	if n <= 0 {
		return true, Shortfall{}
	}
	for _, src := range []struct {
		name string
		list corev1.ResourceList
	}{{"nodes", c.Free}, {"quota", c.QuotaFree}} {
		for _, name := range requested(perPod) {
			free, ok := src.list[name]
			if !ok || fits(free, request(perPod, name)) >= n {
				continue
			}
			need := request(perPod, name).DeepCopy()
			need.Mul(n)
			return false, Shortfall{Resource: name, Source: src.name, Need: need, Free: free}
		}
	}
	return true, Shortfall{}
}

// requested returns the resources a pod requests, pods included, sorted.
func requested(perPod corev1.ResourceList) []corev1.ResourceName {
	names := []corev1.ResourceName{corev1.ResourcePods}
	for name, q := range perPod {
		if name != corev1.ResourcePods && !q.IsZero() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// request is what one pod requests of name; every pod takes one of "pods".
func request(perPod corev1.ResourceList, name corev1.ResourceName) *resource.Quantity {
	if name == corev1.ResourcePods {
		return resource.NewQuantity(1, resource.DecimalSI)
	}
	return perPod.Name(name, resource.DecimalSI)
}

// fits is how many times per fits in free.
func fits(free resource.Quantity, per *resource.Quantity) int64 {
	if per.IsZero() {
		return math.MaxInt64
	}
	if free.Sign() <= 0 {
		return 0
	}
	// Milli-units are exact but overflow past 9.2e15 (8 PiB of memory, or
	// of ephemeral storage summed over a large cluster): beyond, divide
	// approximately, below math.MaxInt64, which means unlimited.
	const exact = math.MaxInt64 / 1000
	if free.CmpInt64(exact) < 0 && per.CmpInt64(exact) < 0 {
		return free.MilliValue() / per.MilliValue()
	}
	n := math.Floor(free.AsApproximateFloat64() / per.AsApproximateFloat64())
	if n >= math.MaxInt64 {
		return math.MaxInt64 - 1
	}
	return int64(n)
}

// formatQuantity prints CPU in cores and bytes in Mi or Gi, rounded up when
// up is set (a need) and down otherwise (what is free), so that a need never
// reads like the room that falls short of it. Nothing left prints "none".
func formatQuantity(q resource.Quantity, name corev1.ResourceName, up bool) string {
	if q.Sign() <= 0 && !up {
		return "none"
	}
	switch {
	case name == corev1.ResourceCPU:
		return strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
	case name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return formatBytes(q.Value(), up)
	}
	return q.String()
}

// formatBytes prints n bytes in whole Mi below 1Gi, else in Gi to a tenth.
func formatBytes(n int64, up bool) string {
	round := math.Floor
	if up {
		round = math.Ceil
	}
	const mi, gi = 1 << 20, 1 << 30
	if n < gi {
		return strconv.FormatFloat(round(float64(n)/mi), 'f', -1, 64) + "Mi"
	}
	return strconv.FormatFloat(round(float64(n)/gi*10)/10, 'f', -1, 64) + "Gi"
}
