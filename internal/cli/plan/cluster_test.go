package plan

import (
	"cmp"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/planreport"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
)

func TestPlanWaves(t *testing.T) {
	t.Parallel()
	clusters := []corev1beta1.FederatedCluster{{}, {}, {}}
	for i, name := range []string{"a", "b", "c"} {
		clusters[i].Name = name
	}
	clusters[1].Labels = map[string]string{"tier": "canary"}
	placed := []string{"a", "b", "c"}
	tests := []struct {
		name    string
		rollout string
		want    string
	}{
		{name: "no rollout", want: "all:a,b,c"},
		{name: "strategy All", rollout: `{"strategy": "All", "waves": [{"clusters": ["a"]}]}`, want: "all:a,b,c"},
		{name: "waves", rollout: `{"strategy": "Waves", "waves": [{"name": "canary", "clusterSelector": {"matchLabels": {"tier": "canary"}}}, {"clusters": ["c"]}]}`,
			want: "canary:b wave-1:c rest:a"},
	}
	for _, tt := range tests {
		fed := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		if tt.rollout != "" {
			if err := fed.UnmarshalJSON([]byte(`{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment", "spec": {"rollout": ` + tt.rollout + `}}`)); err != nil {
				t.Fatal(err)
			}
		}
		spec, err := render.ParseSpec(fed)
		if err != nil {
			t.Fatal(err)
		}
		r, err := planWaves(spec.Rollout, placed, clusters)
		var got []string
		for _, w := range r.Waves {
			got = append(got, w.Name+":"+strings.Join(w.Clusters, ","))
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("%s: %v, %v; want %s", tt.name, got, err, tt.want)
		}
	}
}

func TestScrubCluster(t *testing.T) {
	t.Parallel()
	in := testInput(false, false)
	in.s.kind.Type.Target = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	// The template's values are known from the start, as in the
	// controller's sync (propagation.ScrubberOf); a copy seen adds its own.
	in.s.fed.Object["spec"] = map[string]any{"template": map[string]any{"stringData": map[string]any{"key": "from-the-template"}}}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"data":       map[string]any{"password": "aHVudGVyMjIy"}, // hunter222
		"stringData": map[string]any{"pin": "123", "token": "tok-abcdef"},
	}}
	sc := propagation.ScrubberOf(in.s.kind.Type, in.s.fed)
	propagation.Seen(sc, secret)
	c := planreport.Cluster{Reason: "value hunter222 and tok-abcdef", DryRun: &planreport.DryRun{Message: "got aHVudGVyMjIy, pin 123, from-the-template"}}
	scrubCluster(sc, &c)
	if c.Reason != "value <redacted> and <redacted>" || c.DryRun.Message != "got <redacted>, pin 123, <redacted>" {
		t.Errorf("scrubbed: %q, %q", c.Reason, c.DryRun.Message)
	}
	// Another kind is not scrubbed.
	c = planreport.Cluster{Reason: "value hunter222"}
	scrubCluster(propagation.ScrubberOf(testInput(false, false).s.kind.Type, in.s.fed), &c)
	if c.Reason != "value hunter222" {
		t.Errorf("a Deployment's plan was scrubbed: %q", c.Reason)
	}
}

// testInput is a planInput of a FederatedDeployment at template version 2,
// override version 1.
func testInput(force, adopt bool) *planInput {
	fed := &unstructured.Unstructured{Object: map[string]any{}}
	fed.SetName("web")
	fed.SetNamespace("shop")
	if adopt {
		fed.SetAnnotations(map[string]string{typesv1beta1.AnnotationConflictResolution: typesv1beta1.ConflictResolutionAdopt})
	}
	return &planInput{
		s: &subject{fed: fed, cpv: &typesv1beta1.ClusterPropagatedVersion{}, kind: kindref.Kind{Type: propagation.Type{
			Federated:        schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment"},
			Target:           schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			TargetNamespaced: true, FederatedNamespaced: true,
		}}},
		Inputs: propagation.Inputs{Versions: render.Versions{Template: "2", Override: "1"}, Force: force},
	}
}

func TestPlanPull(t *testing.T) {
	t.Parallel()
	drifted := typesv1beta1.ClusterVersion{TemplateVersion: "2", OverrideVersion: "1", State: typesv1beta1.ModifiedOutOfBand, Version: "7",
		ChangedPaths: []string{"/spec/replicas"}, ChangedBy: []string{"kubectl-edit"}}
	missing := typesv1beta1.ClusterVersion{TemplateVersion: "1", OverrideVersion: "1", State: typesv1beta1.Missing, Version: "7"}
	tests := []struct {
		name        string
		entry       *typesv1beta1.ClusterVersion
		remediation typesv1beta1.Remediation
		force       bool
		want        planreport.Action
		reason      string
		overrode    bool
	}{
		{name: "no report", want: planreport.ActionCreate, reason: "its agent has reported no copy"},
		{name: "behind", entry: &typesv1beta1.ClusterVersion{TemplateVersion: "1", OverrideVersion: "1", State: typesv1beta1.ModifiedOutOfBand, ChangedPaths: []string{"/spec/replicas"}},
			want: planreport.ActionUpdate, reason: "its agent reports template version 1, override version 1; it applies 2, 1", overrode: true},
		{name: "current", entry: &typesv1beta1.ClusterVersion{TemplateVersion: "2", OverrideVersion: "1", State: typesv1beta1.InSync}, want: planreport.ActionUnchanged},
		{name: "current, resync", entry: &typesv1beta1.ClusterVersion{TemplateVersion: "2", OverrideVersion: "1", State: typesv1beta1.InSync}, force: true, want: planreport.ActionUpdate},
		// As the agent's DecideWrite decides on its own copy (plandiff found
		// plan leaving the drift and the remediation out).
		{name: "edited by hand, Alert", entry: &drifted, remediation: typesv1beta1.RemediationAlert, want: planreport.ActionUnchanged,
			reason: "its agent reports the copy changed in the member by kubectl-edit: /spec/replicas; left as it is (remediation Alert)"},
		{name: "edited by hand, Enforce", entry: &drifted, want: planreport.ActionUpdate, reason: "written back (remediation Enforce)", overrode: true},
		{name: "deleted by hand, Alert, a new template", entry: &missing, remediation: typesv1beta1.RemediationAlert, want: planreport.ActionUnchanged,
			reason: "its agent reports that the copy was deleted in the member; not recreated (remediation Alert)"},
		{name: "deleted by hand, Alert, resync", entry: &missing, remediation: typesv1beta1.RemediationAlert, force: true, want: planreport.ActionCreate,
			reason: "created again, as kubefed.io/resync has a new value", overrode: true},
		{name: "deleted by hand, Enforce", entry: &missing, want: planreport.ActionCreate, reason: "created again", overrode: true},
	}
	for _, tt := range tests {
		in := testInput(tt.force, false)
		in.Previous = map[string]typesv1beta1.ClusterVersion{}
		if tt.entry != nil {
			in.Previous["edge"] = *tt.entry
		}
		c := planreport.Cluster{Name: "edge"}
		planPull(in, &c, nil, cmp.Or(tt.remediation, typesv1beta1.RemediationEnforce))
		skipped := c.DryRun != nil && c.DryRun.Status == planreport.DryRunSkipped && strings.Contains(c.DryRun.Message, "the host keeps no credentials")
		if c.Action != tt.want || !strings.Contains(c.Reason, tt.reason) || !c.Pull || skipped != c.Action.Writes() || (c.OverwritesDrift != nil) != tt.overrode {
			t.Errorf("%s: %+v, want %s with %q", tt.name, c, tt.want, tt.reason)
		}
	}
}

// TestPlanPullOfUnchangedContent: a template change that an override
// hides in a Pull cluster leaves its copy's content as it is: its agent
// writes nothing.
func TestPlanPullOfUnchangedContent(t *testing.T) {
	t.Parallel()
	const doc = `{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment", "metadata": {"name": "web", "namespace": "shop"},
		"spec": {"overrides": [{"clusterName": "edge", "clusterOverrides": [{"path": "/spec/template/spec/containers/0/image", "value": "nginx:edge"}]}],
		"template": {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "IMAGE"}]}}}}}}`
	for _, tt := range []struct {
		name, planned string
		want          planreport.Action
	}{
		{name: "the image the override hides", planned: "nginx:1.26", want: planreport.ActionUnchanged},
		{name: "the same template", planned: "nginx:1.25", want: planreport.ActionUnchanged},
	} {
		in := testInput(false, false)
		in.s.current, in.s.fed = &unstructured.Unstructured{}, &unstructured.Unstructured{}
		if err := in.s.current.UnmarshalJSON([]byte(strings.Replace(doc, "IMAGE", "nginx:1.25", 1))); err != nil {
			t.Fatal(err)
		}
		if err := in.s.fed.UnmarshalJSON([]byte(strings.Replace(doc, "IMAGE", tt.planned, 1))); err != nil {
			t.Fatal(err)
		}
		spec, err := render.ParseSpec(in.s.fed)
		if err != nil {
			t.Fatal(err)
		}
		in.s.spec = spec
		in.s.cpv.Status = typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "1", OverrideVersion: "1"}
		in.Previous = map[string]typesv1beta1.ClusterVersion{"edge": {ClusterName: "edge", State: typesv1beta1.InSync, TemplateVersion: "1", OverrideVersion: "1"}}
		desired, err := in.s.kind.Type.Render(in.s.fed, in.s.spec, "edge", nil)
		if err != nil {
			t.Fatal(err)
		}
		c := planreport.Cluster{Name: "edge"}
		planPull(in, &c, desired, typesv1beta1.RemediationEnforce)
		if c.Action != tt.want || c.DryRun != nil {
			t.Errorf("%s: %+v, want %s", tt.name, c, tt.want)
		}
		// Another cluster, which the template change reaches, is updated.
		in.Previous["core"] = typesv1beta1.ClusterVersion{ClusterName: "core", State: typesv1beta1.InSync, TemplateVersion: "1", OverrideVersion: "1"}
		core, err := in.s.kind.Type.Render(in.s.fed, in.s.spec, "core", nil)
		if err != nil {
			t.Fatal(err)
		}
		c = planreport.Cluster{Name: "core"}
		planPull(in, &c, core, typesv1beta1.RemediationEnforce)
		if changed := tt.planned != "nginx:1.25"; (c.Action == planreport.ActionUpdate) != changed {
			t.Errorf("%s: the cluster without the override: %+v", tt.name, c)
		}
	}
}
