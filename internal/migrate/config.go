package migrate

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// defaultLeaseDuration is KubeFed's leader lease duration when its
// KubeFedConfig sets none.
const defaultLeaseDuration = 15 * time.Second

// durationAt reads a duration under the KubeFedConfig's spec.
func durationAt(cfg *unstructured.Unstructured, path ...string) (time.Duration, bool) {
	s, found, _ := unstructured.NestedString(cfg.Object, append([]string{"spec"}, path...)...)
	if !found {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// configField is a KubeFedConfig setting: the flag of Fedwarden's
// controller-manager that carries it over, or why none does.
type configField struct {
	path []string
	// flag of `fedwarden controller-manager` taking the value; "" when
	// there is none.
	flag string
	// reason says why the setting is not carried over (flag == "").
	reason string
}

// configFields are the KubeFedConfig settings, in the order the plan
// lists them.
var configFields = []configField{
	{path: []string{"scope"}, reason: "Fedwarden's control plane watches federated resources in every namespace; a Namespaced scope is not kept"},
	{path: []string{"controllerDuration", "availableDelay"}, reason: "no equivalent: Fedwarden syncs a resource when it or its copies change"},
	{path: []string{"controllerDuration", "unavailableDelay"}, reason: "no equivalent: an unreachable cluster is retried with backoff (--propagation-retry-period)"},
	{path: []string{"controllerDuration", "cacheSyncTimeout"}, reason: "no equivalent: see --host-list-timeout, --member-list-timeout and --startup-timeout"},
	{path: []string{"leaderElect", "leaseDuration"}, reason: "Fedwarden elects its leader with its own Lease (--leader-election-id) and controller-runtime's timings"},
	{path: []string{"leaderElect", "renewDeadline"}, reason: "Fedwarden elects its leader with its own Lease and controller-runtime's timings"},
	{path: []string{"leaderElect", "retryPeriod"}, reason: "Fedwarden elects its leader with its own Lease and controller-runtime's timings"},
	{path: []string{"leaderElect", "resourceLock"}, reason: "Fedwarden's leader lock is always a Lease"},
	{path: []string{"clusterHealthCheck", "period"}, flag: "--cluster-health-period"},
	{path: []string{"clusterHealthCheck", "timeout"}, flag: "--cluster-health-timeout"},
	{path: []string{"clusterHealthCheck", "failureThreshold"}, flag: "--cluster-health-failure-threshold"},
	{path: []string{"clusterHealthCheck", "successThreshold"}, flag: "--cluster-health-success-threshold"},
	{path: []string{"syncController", "maxConcurrentReconciles"}, flag: "--propagation-workers"},
	{path: []string{"syncController", "adoptResources"}, reason: "Fedwarden adopts the copies KubeFed placed (label kubefed.io/managed=true); " +
		"any other existing object only when its federated resource is annotated kubefed.io/conflict-resolution: adopt"},
	{path: []string{"statusController", "maxConcurrentReconciles"}, reason: "no equivalent: status is collected by the propagation workers"},
}

// featureGates says, per KubeFed feature gate, what becomes of it when
// Enabled; "" when Fedwarden does the same.
var featureGates = map[string]string{
	"PushReconciler":               "",
	"SchedulerPreferences":         "",
	"CrossClusterServiceDiscovery": "no equivalent: Fedwarden has no multi-cluster DNS",
	"FederatedIngress":             "no equivalent: Fedwarden has no multi-cluster DNS",
	"RawResourceStatusCollection":  "no equivalent: Fedwarden collects the status of Deployments only",
}

// configPlan returns what becomes of the KubeFedConfig: the flags of
// Fedwarden's controller-manager that carry settings over, and the
// settings that are not.
func configPlan(cfg *unstructured.Unstructured) (args []string, lost []Finding) {
	if cfg == nil {
		return nil, nil
	}
	subject := "KubeFedConfig " + cfg.GetName()
	for _, f := range configFields {
		v, found, _ := unstructured.NestedFieldNoCopy(cfg.Object, append([]string{"spec"}, f.path...)...)
		if !found || v == nil {
			continue
		}
		value := fmt.Sprint(v)
		if f.path[0] == "scope" && value == "Cluster" {
			continue // what Fedwarden does
		}
		setting := "spec." + joinPath(f.path) + " " + value
		if f.flag != "" {
			args = append(args, f.flag+"="+flagValue(v))
			continue
		}
		lost = append(lost, Finding{Subject: subject, Setting: setting, Reason: f.reason})
	}
	gates, _, _ := unstructured.NestedSlice(cfg.Object, "spec", "featureGates")
	for _, g := range gates {
		m, _ := g.(map[string]any)
		name, _ := m["name"].(string)
		mode, _ := m["configuration"].(string)
		reason, known := featureGates[name]
		switch {
		case name == "PushReconciler" && mode == "Disabled":
			lost = append(lost, Finding{Subject: subject, Setting: "feature gate PushReconciler Disabled", Reason: "Fedwarden always propagates"})
		case mode != "Enabled" || (known && reason == ""):
		case !known:
			lost = append(lost, Finding{Subject: subject, Setting: "feature gate " + name + " Enabled", Reason: "unknown to Fedwarden"})
		default:
			lost = append(lost, Finding{Subject: subject, Setting: "feature gate " + name + " Enabled", Reason: reason})
		}
	}
	return args, lost
}

func joinPath(path []string) string {
	s := path[0]
	for _, p := range path[1:] {
		s += "." + p
	}
	return s
}

// flagValue spells a KubeFedConfig value as a flag value.
func flagValue(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
