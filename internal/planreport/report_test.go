package planreport

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestSummarizeAndWrite(t *testing.T) {
	t.Parallel()
	r := &Report{Kind: "FederatedDeployment", Namespace: "shop", Name: "web", Source: "file",
		Rollout: Rollout{Strategy: "Waves", Waves: []Wave{{Name: "canary", Clusters: []string{"a"}}, {Name: "main", Clusters: []string{"b", "c"}}}},
		Clusters: []Cluster{
			{Name: "a", Placed: true, Action: ActionUpdate, DryRun: &DryRun{Status: DryRunAllowed, Allowed: true}},
			{Name: "b", Placed: true, Wave: "main", WaveNumber: 2, Action: ActionCreate, DryRun: &DryRun{Status: DryRunRefused, Message: "image :latest is not allowed"}},
			{Name: "c", Placed: true, Action: ActionConflict},
			{Name: "d", Action: ActionUnknown, Error: "cluster d is not reachable"},
			{Name: "e", Action: ActionNotPlaced},
		}}
	r.Summarize()
	want := Summary{Changes: []string{"a", "b"}, Refused: []string{"b"}, Conflicts: []string{"c"}, Errors: []string{"d"}}
	if s := r.Summary; !slices.Equal(s.Changes, want.Changes) || !slices.Equal(s.Refused, want.Refused) ||
		!slices.Equal(s.Conflicts, want.Conflicts) || !slices.Equal(s.Errors, want.Errors) {
		t.Errorf("summary %+v, want %+v", s, want)
	}
	if name, n := r.Rollout.WaveOf("c"); name != "main" || n != 2 {
		t.Errorf("WaveOf(c) = %s, %d; want main, 2", name, n)
	}
	if name, n := r.Rollout.WaveOf("e"); name != "" || n != 0 {
		t.Errorf("WaveOf(e) = %s, %d; want none", name, n)
	}

	var text strings.Builder
	if err := Write(&text, false, []*Report{r}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"Plan for FederatedDeployment shop/web (a change to the resource the host has)\n",
		"  wave 2/2 main: b, c\n",
		"b: Create, wave 2/2 main\n",
		"  dry run: REFUSED by the member: image :latest is not allowed\n",
		"d: Unknown\n  error: cluster d is not reachable\n",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("the text report lacks %q:\n%s", line, text.String())
		}
	}

	var js strings.Builder
	if err := Write(&js, true, []*Report{{Kind: "FederatedNamespace", Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(js.String()), &back); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, js.String())
	}
	if back["kind"] != "FederatedNamespace" || back["namespace"] != "" {
		t.Errorf("-o json: %s", js.String())
	}
}
