package e2e

import (
	"context"
	"fmt"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// fdeploy is a valid FederatedDeployment; %s is replaced by the part of its
// spec under test (placement and overrides).
const fdeploy = `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata:
  name: invalid
  namespace: default
spec:
  template:
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers: [{name: web, image: nginx}]
%s
`

func overrides(op, path, value string) string {
	o := "  overrides:\n  - clusterName: cluster1\n    clusterOverrides:\n    - path: " + path
	if op != "" {
		o += "\n      op: " + op
	}
	if value != "" {
		o += "\n      value: " + value
	}
	return o
}

const fcluster = `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedCluster
metadata:
  name: %s
spec:
  apiEndpoint: %s
  secretRef: {name: cluster1-secret}
  %s
`

const ftc = `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata:
  name: %s
spec:
  targetType: {group: apps, version: v1, kind: Deployment, pluralName: deployments, scope: Namespaced}
  federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced}
  propagation: Enabled
  %s
`

const rsp = `
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata:
  name: invalid
  namespace: default
spec:
  targetKind: FederatedDeployment
  totalReplicas: %d
  clusters:
    %s
`

// TestInvalidObjectsAreRejected checks that what a user gets wrong is refused
// at admission, with a message naming the field.
func TestInvalidObjectsAreRejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		manifest   string
		field, why string
	}{
		{"override op other than add/replace/remove", fmt.Sprintf(fdeploy, overrides("move", "/spec/replicas", "2")),
			"spec.overrides[0].clusterOverrides[0].op", `Unsupported value: "move"`},
		{"override of metadata.name", fmt.Sprintf(fdeploy, overrides("", "/metadata/name", "other")),
			"spec.overrides[0].clusterOverrides[0].path", "must not change the object's identity"},
		{"override of metadata.namespace", fmt.Sprintf(fdeploy, overrides("add", "/metadata/namespace", "other")),
			"spec.overrides[0].clusterOverrides[0].path", "must not change the object's identity"},
		{"override of metadata.generateName", fmt.Sprintf(fdeploy, overrides("add", "/metadata/generateName", "x-")),
			"spec.overrides[0].clusterOverrides[0].path", "must not change the object's identity"},
		{"override of kind", fmt.Sprintf(fdeploy, overrides("replace", "/kind", "StatefulSet")),
			"spec.overrides[0].clusterOverrides[0].path", "must not change the object's identity"},
		{"override of apiVersion", fmt.Sprintf(fdeploy, overrides("replace", "/apiVersion", "apps/v2")),
			"spec.overrides[0].clusterOverrides[0].path", "must not change the object's identity"},
		{"override of status", fmt.Sprintf(fdeploy, overrides("replace", "/status/replicas", "3")),
			"spec.overrides[0].clusterOverrides[0].path", "must not be under /status"},
		{"override of a server-set field", fmt.Sprintf(fdeploy, overrides("replace", "/metadata/resourceVersion", "'1'")),
			"spec.overrides[0].clusterOverrides[0].path", "the metadata its API server sets"},
		{"override under metadata.name", fmt.Sprintf(fdeploy, overrides("add", "/metadata/name/x", "'1'")),
			"spec.overrides[0].clusterOverrides[0].path", "must not change the object's identity"},
		{"template named after another object", strings.Replace(fmt.Sprintf(fdeploy, ""), "  template:\n    spec:", "  template:\n    metadata: {name: other}\n    spec:", 1),
			"spec.template.metadata.name", "must be empty or the FederatedDeployment's name"},
		{"override path that is not a JSON pointer", fmt.Sprintf(fdeploy, overrides("replace", "spec/replicas", "3")),
			"spec.overrides[0].clusterOverrides[0].path", "should match"},
		{"two overrides for one cluster", fmt.Sprintf(fdeploy, "  overrides:\n  - clusterName: cluster1\n  - clusterName: cluster1"),
			"spec.overrides[1]", "Duplicate value"},
		{"a cluster placed twice", fmt.Sprintf(fdeploy, "  placement: {clusters: [{name: cluster1}, {name: cluster1}]}"),
			"spec.placement.clusters[1]", "Duplicate value"},
		{"placement cluster name not a DNS label", fmt.Sprintf(fdeploy, "  placement: {clusters: [{name: Cluster_1}]}"),
			"spec.placement.clusters[0].name", "should match"},
		{"cluster selector with an unknown operator", fmt.Sprintf(fdeploy, "  placement: {clusterSelector: {matchExpressions: [{key: region, operator: Equals, values: [eu]}]}}"),
			"spec.placement.clusterSelector.matchExpressions[0].operator", `Unsupported value: "Equals"`},
		{"cluster selector In without values", fmt.Sprintf(fdeploy, "  placement: {clusterSelector: {matchExpressions: [{key: region, operator: In}]}}"),
			"spec.placement.clusterSelector.matchExpressions[0].values", "values must be non-empty for operator In and NotIn"},
		{"failover with a negative toleration", fmt.Sprintf(fdeploy, "  placement: {clusters: [{name: cluster1}], failover: {tolerationSeconds: -1}}"),
			"spec.placement.failover.tolerationSeconds", "greater than or equal to 0"},
		{"failover with a negative failback count", fmt.Sprintf(fdeploy, "  placement: {clusters: [{name: cluster1}], failover: {failbackAfterSeconds: -5}}"),
			"spec.placement.failover.failbackAfterSeconds", "greater than or equal to 0"},
		{"failover with an unknown failback", fmt.Sprintf(fdeploy, "  placement: {clusters: [{name: cluster1}], failover: {failback: Sometimes}}"),
			"spec.placement.failover.failback", `Unsupported value: "Sometimes"`},
		{"override cluster name not a DNS label", fmt.Sprintf(fdeploy, "  overrides: [{clusterName: cluster.one}]"),
			"spec.overrides[0].clusterName", "should match"},
		{"template without a selector", strings.Replace(fmt.Sprintf(fdeploy, ""), "selector: {matchLabels: {app: web}}", "replicas: 1", 1),
			"spec.template.spec.selector", "Required value"},
		{"cluster name not a DNS label", fmt.Sprintf(fcluster, "cluster.one", "https://127.0.0.1:1", ""),
			"metadata.name", "must be a DNS-1123 label"},
		{"apiEndpoint over plain http", fmt.Sprintf(fcluster, "cluster1", "http://127.0.0.1:1", ""),
			"spec.apiEndpoint", "must be an https:// URL"},
		{"apiEndpoint not a URL", fmt.Sprintf(fcluster, "cluster1", "127.0.0.1:1", ""),
			"spec.apiEndpoint", "must be an https:// URL"},
		{"unknown sync mode", fmt.Sprintf(fcluster, "cluster1", "https://127.0.0.1:1", "syncMode: Sideways"),
			"spec.syncMode", `Unsupported value: "Sideways"`},
		{"push cluster without credentials", strings.Replace(fmt.Sprintf(fcluster, "cluster1", "https://127.0.0.1:1", "syncMode: Push"), "secretRef: {name: cluster1-secret}", "region: eu", 1),
			"spec.secretRef", "spec.secretRef is required when spec.syncMode is Push"},
		{"caBundle not base64", fmt.Sprintf(fcluster, "cluster1", "https://127.0.0.1:1", "caBundle: '%%%'"),
			"spec.caBundle", "must be of type byte"},
		{"type config named after another type", fmt.Sprintf(ftc, "deployment", ""),
			"metadata.name", "must be <spec.targetType.pluralName>.<spec.targetType.group>"},
		{"type config namespaced disagreeing with scope", fmt.Sprintf(ftc, "deployments.apps", "namespaced: false"),
			"spec.namespaced", "spec.namespaced must agree with spec.targetType.scope"},
		{"type config whose federated type has another scope", strings.Replace(fmt.Sprintf(ftc, "deployments.apps", ""), "pluralName: federateddeployments, scope: Namespaced", "pluralName: federateddeployments, scope: Cluster", 1),
			"spec.federatedType.scope", "must equal spec.targetType.scope"},
		{"type config with unknown status collection mode", fmt.Sprintf(ftc, "deployments.apps", "statusCollection: Sometimes"),
			"spec.statusCollection", `Unsupported value: "Sometimes"`},
		{"replica preference with max below min", fmt.Sprintf(rsp, 10, "cluster1: {minReplicas: 3, maxReplicas: 2}"),
			"spec.clusters[cluster1]", "maxReplicas must not be less than minReplicas"},
		{"replica preference for a bad cluster name", fmt.Sprintf(rsp, 10, "'Cluster One': {weight: 1}"),
			"spec.clusters", `must be "*" or cluster names`},
		{"negative total replicas", fmt.Sprintf(rsp, -1, "'*': {weight: 1}"),
			"spec.totalReplicas", "greater than or equal to 0"},
		{"negative weight", fmt.Sprintf(rsp, 4, "'*': {weight: -1}"),
			"spec.clusters.*.weight", "greater than or equal to 0"},
	}
	c := hostClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := decode(t, tt.manifest)
			err := c.Create(t.Context(), obj)
			if err == nil {
				_ = c.Delete(context.Background(), obj)
			}
			rejected(t, err, tt.field, tt.why)
		})
	}
}

// TestInvalidCPVStatusIsRejected checks the status a controller or agent
// writes: versions are counters and each cluster appears once.
func TestInvalidCPVStatusIsRejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     string
		field, why string
	}{
		{"version not a counter", `{templateVersion: "three"}`, "status.templateVersion", "should match"},
		{"cluster reported twice", `{clusterVersions: [{clusterName: c1}, {clusterName: c1}]}`, "status.clusterVersions[1]", "Duplicate value"},
		{"unknown drift state", `{clusterVersions: [{clusterName: c1, state: Fine}]}`, "status.clusterVersions[0].state", `Unsupported value: "Fine"`},
		{"negative observed generation", `{clusterVersions: [{clusterName: c1, observedGeneration: -1}]}`, "status.clusterVersions[0].observedGeneration", "greater than or equal to 0"},
	}
	c := hostClient(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := decode(t, fmt.Sprintf("{apiVersion: types.kubefed.io/v1beta1, kind: ClusterPropagatedVersion, metadata: {name: invalid-status-%d, namespace: default}, spec: {template: x}}", i))
			if err := c.Create(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
			obj.Object["status"] = decode(t, tt.status).Object
			rejected(t, c.Status().Update(t.Context(), obj), tt.field, tt.why)
		})
	}
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("decoding test manifest: %v\n%s", err, manifest)
	}
	return obj
}

// TestValidObjectsAreAccepted checks that the validation refuses only what
// is wrong: KubeFed's shapes and every documented form are accepted.
func TestValidObjectsAreAccepted(t *testing.T) {
	t.Parallel()
	c := hostClient(t)
	ns := testNamespace(t, c)
	tests := []struct {
		name     string
		manifest string
		// emptyPlacement: the object says clusters: [] (no cluster),
		// which must be stored as it is, not dropped.
		emptyPlacement bool
	}{
		// A kind no test of the shared bed enables: a dry run of a create
		// still fails when an object of its name exists.
		{name: "KubeFed type config for a core kind, without a group", manifest: `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: limitranges}
spec:
  federatedType: {group: types.kubefed.io, kind: FederatedLimitRange, pluralName: federatedlimitranges, scope: Namespaced, version: v1beta1}
  propagation: Enabled
  targetType: {kind: LimitRange, pluralName: limitranges, scope: Namespaced, version: v1}`},
		{name: "KubeFed type config for namespaces", manifest: `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: namespaces}
spec:
  federatedType: {group: types.kubefed.io, kind: FederatedNamespace, pluralName: federatednamespaces, scope: Namespaced, version: v1beta1}
  propagation: Enabled
  targetType: {kind: Namespace, pluralName: namespaces, scope: Cluster, version: v1}`},
		{name: "type config with namespaced and status fields", manifest: `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: replicasets.apps}
spec:
  targetType: {group: apps, version: v1, kind: ReplicaSet, pluralName: replicasets, scope: Namespaced}
  namespaced: true
  federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedReplicaSet, pluralName: federatedreplicasets, scope: Namespaced}
  statusType: {group: types.kubefed.io, version: v1beta1, kind: FederatedReplicaSetStatus, pluralName: federatedreplicasetstatuses, scope: Namespaced}
  statusCollection: Enabled`},
		{name: "push cluster", manifest: `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedCluster
metadata: {name: accepted-push}
spec:
  apiEndpoint: https://127.0.0.1:1
  caBundle: ` + "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t" + `
  secretRef: {name: accepted-push}
  region: eu-west-1
  zones: [eu-west-1a, eu-west-1b]`},
		{name: "pull cluster without credentials", manifest: `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedCluster
metadata: {name: accepted-pull}
spec: {apiEndpoint: "https://127.0.0.1:1", syncMode: Pull}`},
		{name: "replica preference with a default for every cluster", manifest: `
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: accepted, namespace: ` + ns + `}
spec:
  targetKind: FederatedDeployment
  totalReplicas: 9
  clusters:
    "*": {weight: 1}
    cluster1: {minReplicas: 2, maxReplicas: 2, weight: 2}`},
		{name: "deployment placed on no cluster, with a selector and allowed overrides", manifest: `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: accepted, namespace: ` + ns + `}
spec:
  template:
    metadata: {name: accepted, labels: {app: web}}
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web, tier: front}}
        spec:
          containers: [{name: web, image: nginx}]
  placement:
    clusters: []
    clusterSelector:
      matchExpressions:
      - {key: region, operator: In, values: [eu-west-1]}
      - {key: gpu, operator: DoesNotExist}
  overrides:
  - clusterName: cluster1
    clusterOverrides:
    - {path: /metadata/labels/tier, op: add, value: edge}
    - {path: /metadata/annotations, op: add, value: {owner: team-a}}
    - {path: /spec/template/spec/containers/0/image, value: "nginx:1.27"}
    - {path: /spec/replicas, op: remove}`, emptyPlacement: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := decode(t, tt.manifest)
			var opts []client.CreateOption
			switch obj.GetKind() {
			case "FederatedTypeConfig", "FederatedCluster":
				// Only admitted, not stored: a stored type config would
				// enable the type for the other tests of this package, and
				// a stored cluster would be probed by the controller-manager.
				opts = append(opts, client.DryRunAll)
			}
			if err := c.Create(t.Context(), obj, opts...); err != nil {
				t.Fatalf("the host refused a valid object: %v", err)
			}
			if len(opts) > 0 {
				// Nothing was stored: a delete would remove another
				// test's object of the same name.
				return
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
			if !tt.emptyPlacement {
				return
			}
			got := readBack(t, c, obj)
			if clusters, found, _ := unstructured.NestedSlice(got.Object, "spec", "placement", "clusters"); !found || len(clusters) != 0 {
				t.Errorf("an empty placement list must be kept (it means no cluster); read back %v (found %v)", clusters, found)
			}
		})
	}
}
