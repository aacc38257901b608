package status

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	host := []string{"--host-kubeconfig", kc}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "an argument", args: append([]string{"all"}, host...), wantErr: `status takes no arguments; got ["all"]`},
		{name: "bad output", args: append([]string{"-o", "wide"}, host...), wantErr: `--output "wide" is not supported: use json or yaml`},
		{name: "negative top", args: append([]string{"--top", "-1"}, host...), wantErr: "--top -1 must not be negative"},
		{name: "top not a number", args: append([]string{"--top", "many"}, host...), wantErr: `invalid argument "many" for "--top"`},
		{name: "bad timeout", args: append([]string{"--timeout", "0s"}, host...), wantErr: "--timeout 0s must be positive"},
		{name: "unknown flag", args: append([]string{"-A"}, host...), wantErr: "unknown shorthand flag: 'A'"},
		{name: "missing context", args: []string{"--host-kubeconfig", kc, "--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

func TestUnreachableHostIsAnError(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	stdout, stderr, code := clitest.Execute(NewCommand, "--host-kubeconfig", kc, "--timeout", "2s")
	if code != 1 || stdout != "" {
		t.Errorf("exit code %d, want 1; stdout %q", code, stdout)
	}
	for _, want := range []string{"listing FederatedClusters", "listing FederatedTypeConfigs", "listing ClusterPropagatedVersions"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not contain %q", stderr, want)
		}
	}
}

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time {
	t := metav1.NewTime(now.Add(-d))
	return &t
}

func cond(t string, status metav1.ConditionStatus, reason string) []metav1.Condition {
	return []metav1.Condition{{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(now)}}
}

// testObjects are a federation of three clusters (one unreachable, one
// never probed), three type configs (one cluster-scoped, one disabled, one
// whose federated type is not served) and five federated resources, four
// drifted.
func testObjects() objects {
	fcl := func(name string, mode corev1beta1.SyncMode, region, version string, conditions []metav1.Condition) corev1beta1.FederatedCluster {
		return corev1beta1.FederatedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1beta1.FederatedClusterSpec{APIEndpoint: "https://" + name + ":6443", SyncMode: mode, Region: region},
			Status:     corev1beta1.FederatedClusterStatus{Conditions: conditions, KubernetesVersion: version},
		}
	}
	ftc := func(name, kind string, scope corev1beta1.ResourceScope, propagation corev1beta1.Mode, controller corev1beta1.ControllerStatus, conditions []metav1.Condition) corev1beta1.FederatedTypeConfig {
		return corev1beta1.FederatedTypeConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1beta1.FederatedTypeConfigSpec{
				Propagation:   propagation,
				FederatedType: corev1beta1.APIResource{Group: "types.kubefed.io", Version: "v1beta1", Kind: kind, Scope: scope},
			},
			Status: corev1beta1.FederatedTypeConfigStatus{PropagationController: controller, Conditions: conditions},
		}
	}
	cv := func(cluster string, state typesv1beta1.DriftState, since *metav1.Time) typesv1beta1.ClusterVersion {
		return typesv1beta1.ClusterVersion{ClusterName: typesv1beta1.ClusterName(cluster), State: state, DriftedSince: since}
	}
	cpv := func(namespace, kind, name string, propagated bool, counted bool, cvs ...typesv1beta1.ClusterVersion) typesv1beta1.ClusterPropagatedVersion {
		c := typesv1beta1.ClusterPropagatedVersion{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: strings.ToLower(strings.TrimPrefix(kind, "Federated")) + "-" + name},
			Spec:       typesv1beta1.ClusterPropagatedVersionSpec{Template: name, TemplateKind: kind, TemplateAPIVersion: "types.kubefed.io/v1beta1"},
			Status:     typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: cvs},
		}
		for _, v := range cvs {
			c.Spec.Clusters = append(c.Spec.Clusters, typesv1beta1.PlacedCluster{Name: v.ClusterName})
		}
		if propagated {
			c.Status.Conditions = cond(typesv1beta1.CPVPropagated, metav1.ConditionTrue, "Propagated")
		}
		if counted {
			clusters, drifted := int32(len(cvs)), int32(len(driftedStates(c)))
			c.Status.ClusterCount, c.Status.DriftedClusters = &clusters, &drifted
		}
		return c
	}
	return objects{
		clusters: []corev1beta1.FederatedCluster{
			fcl("member-2", corev1beta1.SyncModePull, "", "v1.32.4", cond(corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable)),
			fcl("member-1", "", "eu-west-1", "v1.33.1", cond(corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady)),
			fcl("member-3", corev1beta1.SyncModePush, "us-east-1", "", nil),
		},
		types: []corev1beta1.FederatedTypeConfig{
			ftc("deployments.apps", "FederatedDeployment", corev1beta1.NamespaceScoped, "", corev1beta1.ControllerStatusRunning,
				cond(corev1beta1.TypeConfigEstablished, metav1.ConditionTrue, corev1beta1.ReasonControllerRunning)),
			ftc("configmaps", "FederatedConfigMap", corev1beta1.NamespaceScoped, corev1beta1.Disabled, corev1beta1.ControllerStatusNotRunning,
				cond(corev1beta1.TypeConfigEstablished, metav1.ConditionFalse, corev1beta1.ReasonPropagationDisabled)),
			ftc("clusterroles.rbac.authorization.k8s.io", "FederatedClusterRole", corev1beta1.ClusterScoped, corev1beta1.Enabled, "", nil),
		},
		cpvs: []typesv1beta1.ClusterPropagatedVersion{
			cpv("shop", "FederatedDeployment", "web", false, true,
				cv("member-1", typesv1beta1.InSync, nil),
				cv("member-2", typesv1beta1.Unreachable, ago(10*time.Minute)),
				cv("member-3", typesv1beta1.ModifiedOutOfBand, ago(3*time.Hour))),
			cpv("shop", "FederatedDeployment", "api", true, true,
				cv("member-1", typesv1beta1.InSync, nil),
				cv("member-2", typesv1beta1.InSync, nil)),
			// Not counted by the controller yet: the entries are.
			cpv("blog", "FederatedDeployment", "web", true, false,
				cv("member-1", typesv1beta1.OutdatedTemplate, ago(2*24*time.Hour)),
				cv("member-2", typesv1beta1.InSync, nil),
				cv("member-3", "", nil)),
			cpv(corev1beta1.DefaultFederationNamespace, "FederatedClusterRole", "reader", true, true,
				cv("member-1", typesv1beta1.Missing, ago(5*time.Hour))),
			cpv("blog", "FederatedDeployment", "feed", true, true,
				cv("member-1", typesv1beta1.ApplyFailed, nil)),
		},
	}
}

func TestReport(t *testing.T) {
	t.Parallel()
	r := newReport(testObjects(), defaultTop)

	wantClusters := []Cluster{
		{Name: "member-1", Ready: metav1.ConditionTrue, Reason: corev1beta1.ReasonClusterReady, Mode: corev1beta1.SyncModePush, KubernetesVersion: "v1.33.1", Region: "eu-west-1"},
		{Name: "member-2", Ready: metav1.ConditionFalse, Reason: corev1beta1.ReasonClusterUnreachable, Mode: corev1beta1.SyncModePull, KubernetesVersion: "v1.32.4"},
		{Name: "member-3", Ready: metav1.ConditionUnknown, Mode: corev1beta1.SyncModePush, Region: "us-east-1"},
	}
	if !slices.Equal(r.Clusters, wantClusters) {
		t.Errorf("clusters:\n%+v\nwant:\n%+v", r.Clusters, wantClusters)
	}

	wantTypes := []TypeConfig{
		{Name: "clusterroles.rbac.authorization.k8s.io", FederatedKind: "FederatedClusterRole", Propagation: corev1beta1.Enabled, Established: metav1.ConditionUnknown},
		{Name: "configmaps", FederatedKind: "FederatedConfigMap", Propagation: corev1beta1.Disabled, Controller: corev1beta1.ControllerStatusNotRunning,
			Established: metav1.ConditionFalse, Reason: corev1beta1.ReasonPropagationDisabled},
		{Name: "deployments.apps", FederatedKind: "FederatedDeployment", Propagation: corev1beta1.Enabled, Controller: corev1beta1.ControllerStatusRunning,
			Established: metav1.ConditionTrue, Reason: corev1beta1.ReasonControllerRunning},
	}
	if !slices.Equal(r.Types, wantTypes) {
		t.Errorf("types:\n%+v\nwant:\n%+v", r.Types, wantTypes)
	}

	res := r.Resources
	if res.Total != 5 || res.Propagated != 4 || res.Drifted != 4 {
		t.Errorf("resources: %d total, %d propagated, %d drifted; want 5, 4, 4", res.Total, res.Propagated, res.Drifted)
	}
	wantStates := map[typesv1beta1.DriftState]int{
		typesv1beta1.InSync: 4, typesv1beta1.OutdatedTemplate: 1, typesv1beta1.OutdatedOverrides: 0, typesv1beta1.ModifiedOutOfBand: 1, typesv1beta1.Waived: 0,
		typesv1beta1.Missing: 1, typesv1beta1.Unreachable: 1, typesv1beta1.ApplyFailed: 1, typesv1beta1.AlreadyExists: 0,
	}
	if !maps.Equal(res.ClusterStates, wantStates) {
		t.Errorf("cluster states %v, want %v", res.ClusterStates, wantStates)
	}
}

func TestWorstOffenders(t *testing.T) {
	t.Parallel()
	name := func(o Offender) string { return o.Namespace + " " + o.resource() }
	tests := []struct {
		top  int
		want []string
	}{
		// Two drifted clusters first; then the oldest drift, then one that
		// does not say since when.
		{top: 5, want: []string{"shop federateddeployment/web", "blog federateddeployment/web", " federatedclusterrole/reader", "blog federateddeployment/feed"}},
		{top: 2, want: []string{"shop federateddeployment/web", "blog federateddeployment/web"}},
		{top: 0, want: nil},
	}
	for _, tt := range tests {
		got := newReport(testObjects(), tt.top).WorstOffenders
		if names := slices.Collect(func(yield func(string) bool) {
			for _, o := range got {
				yield(name(o))
			}
		}); !slices.Equal(names, tt.want) {
			t.Errorf("--top %d: %q, want %q", tt.top, names, tt.want)
		}
		if got == nil {
			t.Errorf("--top %d: nil, want an empty list", tt.top)
		}
	}
	first := newReport(testObjects(), 1).WorstOffenders[0]
	wantStates := []ClusterState{{"member-2", typesv1beta1.Unreachable}, {"member-3", typesv1beta1.ModifiedOutOfBand}}
	if first.DriftedClusters != 2 || first.Clusters != 3 || !slices.Equal(first.States, wantStates) || !first.DriftedSince.Equal(ago(3*time.Hour)) {
		t.Errorf("worst offender: %+v", first)
	}
}

func TestScreen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		objs objects
		top  int
		want string
	}{
		{name: "a federation", objs: testObjects(), top: 3, want: `
Clusters
NAME       READY                        MODE   VERSION   REGION
member-1   True                         Push   v1.33.1   eu-west-1
member-2   False (ClusterUnreachable)   Pull   v1.32.4   <none>
member-3   Unknown                      Push   <none>    us-east-1

Enabled types
NAME                                     FEDERATED KIND         PROPAGATION   CONTROLLER
clusterroles.rbac.authorization.k8s.io   FederatedClusterRole   Enabled       <none>
configmaps                               FederatedConfigMap     Disabled      NotRunning (PropagationDisabled)
deployments.apps                         FederatedDeployment    Enabled       Running

Federated resources
5 total, 4 propagated, 4 drifted
Cluster copies: 4 InSync, 1 OutdatedTemplate, 1 ModifiedOutOfBand, 1 Missing, 1 Unreachable, 1 ApplyFailed

Worst offenders
NAMESPACE   RESOURCE                      DRIFTED   STATES                                            SINCE
shop        federateddeployment/web       2/3       member-2=Unreachable,member-3=ModifiedOutOfBand   3h
blog        federateddeployment/web       1/3       member-1=OutdatedTemplate                         2d
<none>      federatedclusterrole/reader   1/1       member-1=Missing                                  5h
`},
		{name: "no worst offenders asked for", objs: testObjects(), top: 0, want: `
Clusters
NAME       READY                        MODE   VERSION   REGION
member-1   True                         Push   v1.33.1   eu-west-1
member-2   False (ClusterUnreachable)   Pull   v1.32.4   <none>
member-3   Unknown                      Push   <none>    us-east-1

Enabled types
NAME                                     FEDERATED KIND         PROPAGATION   CONTROLLER
clusterroles.rbac.authorization.k8s.io   FederatedClusterRole   Enabled       <none>
configmaps                               FederatedConfigMap     Disabled      NotRunning (PropagationDisabled)
deployments.apps                         FederatedDeployment    Enabled       Running

Federated resources
5 total, 4 propagated, 4 drifted
Cluster copies: 4 InSync, 1 OutdatedTemplate, 1 ModifiedOutOfBand, 1 Missing, 1 Unreachable, 1 ApplyFailed
`},
		{name: "an empty federation", top: defaultTop, want: `
Clusters
None: 'fedwarden join NAME' adds one.

Enabled types
None: 'fedwarden enable RESOURCE' adds one.

Federated resources
0 total, 0 propagated, 0 drifted

Worst offenders
None: nothing drifted.
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := printReport(&out, "", newReport(tt.objs, tt.top), now); err != nil {
				t.Fatal(err)
			}
			if got, want := out.String(), strings.TrimPrefix(tt.want, "\n"); got != want {
				t.Errorf("screen:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestStates(t *testing.T) {
	t.Parallel()
	var s []ClusterState
	for _, c := range []string{"a", "b", "c", "d", "e"} {
		s = append(s, ClusterState{Cluster: c, State: typesv1beta1.Missing})
	}
	if got, want := states(s), "a=Missing,b=Missing,c=Missing,+2"; got != want {
		t.Errorf("states = %q, want %q", got, want)
	}
	if got := states(nil); got != none {
		t.Errorf("states(nil) = %q", got)
	}
}

func TestJSONAndYAML(t *testing.T) {
	t.Parallel()
	r := newReport(testObjects(), defaultTop)
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := printReport(&out, format, r, now); err != nil {
				t.Fatal(err)
			}
			data := out.Bytes()
			if format == "yaml" {
				var err error
				if data, err = yaml.YAMLToJSON(data); err != nil {
					t.Fatal(err)
				}
			}
			var got struct {
				Clusters       []map[string]any `json:"clusters"`
				Types          []map[string]any `json:"types"`
				Resources      map[string]any   `json:"resources"`
				WorstOffenders []map[string]any `json:"worstOffenders"`
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("%v:\n%s", err, out.String())
			}
			checkKeys(t, "cluster", got.Clusters, "kubernetesVersion", "mode", "name", "ready", "reason", "region")
			checkKeys(t, "type", got.Types, "controller", "established", "federatedKind", "name", "propagation", "reason")
			checkKeys(t, "resources", []map[string]any{got.Resources}, "clusterStates", "drifted", "propagated", "total")
			checkKeys(t, "worst offender", got.WorstOffenders, "clusters", "driftedClusters", "driftedSince", "kind", "name", "namespace", "states")
			if c := got.Clusters[1]; c["ready"] != "False" || c["reason"] != "ClusterUnreachable" || c["mode"] != "Pull" {
				t.Errorf("second cluster: %v", c)
			}
			if states, _ := got.Resources["clusterStates"].(map[string]any); len(states) != 9 || states["InSync"] != 4.0 || states["AlreadyExists"] != 0.0 {
				t.Errorf("clusterStates: %v", got.Resources["clusterStates"])
			}
			if len(got.WorstOffenders) != 4 {
				t.Fatalf("%d worst offenders, want 4", len(got.WorstOffenders))
			}
			first := got.WorstOffenders[0]
			if first["namespace"] != "shop" || first["kind"] != "FederatedDeployment" || first["name"] != "web" ||
				first["driftedClusters"] != 2.0 || first["clusters"] != 3.0 || first["driftedSince"] != "2026-03-01T09:00:00Z" {
				t.Errorf("first worst offender: %v", first)
			}
			if states, _ := first["states"].([]any); len(states) != 2 || states[0].(map[string]any)["state"] != "Unreachable" {
				t.Errorf("states: %v", first["states"])
			}
			if last := got.WorstOffenders[3]; last["driftedSince"] != nil {
				t.Errorf("last worst offender: %v", last)
			}
		})
	}
	var out bytes.Buffer
	if err := printReport(&out, "json", newReport(objects{}, defaultTop), now); err != nil {
		t.Fatal(err)
	}
	var empty map[string]any
	if err := json.Unmarshal(out.Bytes(), &empty); err != nil || !slices.Equal(slices.Sorted(maps.Keys(empty)), []string{"clusters", "resources", "types", "worstOffenders"}) ||
		!strings.Contains(out.String(), `"clusters": []`) || !strings.Contains(out.String(), `"worstOffenders": []`) {
		t.Errorf("an empty federation as json (%v):\n%s", err, out.String())
	}
}

// checkKeys checks that each item of what has exactly the keys want.
func checkKeys(t *testing.T, what string, items []map[string]any, want ...string) {
	t.Helper()
	if len(items) == 0 {
		t.Errorf("no %s", what)
	}
	for _, item := range items {
		if keys := slices.Sorted(maps.Keys(item)); !slices.Equal(keys, want) {
			t.Errorf("%s keys %v, want %v", what, keys, want)
		}
	}
}
