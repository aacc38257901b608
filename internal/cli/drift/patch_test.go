package drift

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// testSuggestions are an autoscaler's ignoreManagers entry and a person's
// ignorePaths entry, with their evidence.
func testSuggestions() []Suggestion {
	return []Suggestion{
		{Field: fieldIgnoreManagers, Value: kcm, Evidence: []Evidence{evidence(kcm, false, replicas, 4, []string{"a", "b"}, update, 5, 1)}},
		{Field: fieldIgnorePaths, Value: image, Evidence: []Evidence{evidence("kubectl-edit", true, image, 3, []string{"b"}, update, 3, 1)}},
	}
}

var web = resourceRef{apiVersion: "types.kubefed.io/v1beta1", kind: "FederatedDeployment", namespace: "shop", name: "web"}

// A merge patch replaces a list whole: the patch keeps the entries the
// policy has, and adds the new ones after them; a list no suggestion adds
// to is left out, and so is every other field of the policy.
func TestMergePatchKeepsTheEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy *typesv1beta1.DriftPolicy
		want   string
	}{
		{"no policy", nil, `{"spec":{"driftPolicy":{"ignoreManagers":["kube-controller-manager"],"ignorePaths":["/spec/template/spec/containers/0/image"]}}}`},
		{"entries of its own", &typesv1beta1.DriftPolicy{
			Remediation:    typesv1beta1.RemediationAlert,
			IgnorePaths:    []typesv1beta1.JSONPointer{"/metadata/labels/tier", "/spec/paused"},
			IgnoreManagers: []typesv1beta1.FieldManager{"flux"},
			Clusters:       []typesv1beta1.ClusterDriftPolicy{{Name: "b", IgnorePaths: []typesv1beta1.JSONPointer{"/spec/minReadySeconds"}}},
		}, `{"spec":{"driftPolicy":{"ignoreManagers":["flux","kube-controller-manager"],"ignorePaths":["/metadata/labels/tier","/spec/paused","/spec/template/spec/containers/0/image"]}}}`},
	}
	for _, tt := range tests {
		p := newProposal(web, tt.policy, testSuggestions())
		got, err := json.Marshal(p.Patch)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: patch %s (%v), want %s", tt.name, got, err, tt.want)
		}
		if want := "kubectl patch federateddeployment.types.kubefed.io web -n shop --type merge -p '" + tt.want + "'"; p.Command != want {
			t.Errorf("%s: command\n%s\nwant\n%s", tt.name, p.Command, want)
		}
	}
	only := newProposal(web, &typesv1beta1.DriftPolicy{IgnorePaths: []typesv1beta1.JSONPointer{"/spec/paused"}}, testSuggestions()[:1])
	if got, _ := json.Marshal(only.Patch); string(got) != `{"spec":{"driftPolicy":{"ignoreManagers":["kube-controller-manager"]}}}` {
		t.Errorf("an ignoreManagers suggestion alone: patch %s; want ignorePaths left as it is", got)
	}
}

func TestCommandQuoting(t *testing.T) {
	t.Parallel()
	cluster := resourceRef{apiVersion: "types.kubefed.io/v1beta1", kind: "FederatedClusterRole", name: "reader"}
	p := newProposal(cluster, nil, []Suggestion{{Field: fieldIgnoreManagers, Value: "o'brien-operator"}})
	want := `kubectl patch federatedclusterrole.types.kubefed.io reader --type merge -p '{"spec":{"driftPolicy":{"ignoreManagers":["o'\''brien-operator"]}}}'`
	if p.Command != want {
		t.Errorf("command\n%s\nwant\n%s", p.Command, want)
	}
}

func TestPrintProposals(t *testing.T) {
	t.Parallel()
	p := newProposal(web, &typesv1beta1.DriftPolicy{IgnorePaths: []typesv1beta1.JSONPointer{"/spec/paused"}}, testSuggestions())
	var out bytes.Buffer
	if err := printProposals(&out, formatText, []Proposal{p, p}); err != nil {
		t.Fatal(err)
	}
	one := `federateddeployment.types.kubefed.io/web -n shop
  ignoreManagers: kube-controller-manager
    /spec/replicas by kube-controller-manager (Update): 4 episodes in 2 clusters (a, b), first seen 2026-03-01T07:00:00Z, last seen 2026-03-01T11:00:01Z
  ignorePaths: /spec/template/spec/containers/0/image
    /spec/template/spec/containers/0/image by kubectl-edit (Update), a person's tool: 3 episodes in 1 cluster (b), first seen 2026-03-01T09:00:00Z, last seen 2026-03-01T11:00:01Z
  kubectl patch federateddeployment.types.kubefed.io web -n shop --type merge -p '{"spec":{"driftPolicy":{"ignoreManagers":["kube-controller-manager"],"ignorePaths":["/spec/paused","/spec/template/spec/containers/0/image"]}}}'
`
	if want := one + "\n" + one; out.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if err := printProposals(&out, formatYAML, []Proposal{p}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "# federateddeployment.types.kubefed.io/web -n shop: apply with\n"+
		"#   kubectl patch federateddeployment.types.kubefed.io web -n shop --type merge --patch-file FILE\n"+
		"# ignoreManagers kube-controller-manager: /spec/replicas by kube-controller-manager (Update): 4 episodes") {
		t.Errorf("yaml:\n%s", out.String())
	}
	var doc map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment", "metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{"driftPolicy": map[string]any{"ignoreManagers": []any{kcm}, "ignorePaths": []any{"/spec/paused", image}}}}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("yaml document %v, want %v", doc, want)
	}

	out.Reset()
	if err := printProposals(&out, formatJSON, []Proposal{p}); err != nil {
		t.Fatal(err)
	}
	var items []Proposal
	if err := json.Unmarshal(out.Bytes(), &items); err != nil || len(items) != 1 || items[0].Command != p.Command || len(items[0].Suggestions) != 2 ||
		items[0].Suggestions[1].Evidence[0].Person != true || items[0].Suggestions[0].Evidence[0].Episodes != 4 {
		t.Errorf("json (%v):\n%s", err, out.String())
	}
}
