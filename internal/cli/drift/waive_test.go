package drift

import (
	"strings"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestCodifyAndWaiveUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	waive := []string{"waive", "fdeploy/web", "--cluster", "a", "--path", "/spec/replicas", "--for", "4h", "--reason", "load test"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"codify: no resource", []string{"codify", "--cluster", "a"}, "codify takes one argument, the federated resource, as KIND/NAME; got 0"},
		{"codify: no cluster", []string{"codify", "fdeploy/web"}, "--cluster is required"},
		{"codify: a cluster that is no name", []string{"codify", "fdeploy/web", "--cluster", "A_B"}, `--cluster: "A_B" is not a cluster name`},
		{"codify: a path that is no pointer", []string{"codify", "fdeploy/web", "--cluster", "a", "--path", "spec/replicas"}, `--path "spec/replicas" is not a JSON pointer`},
		{"codify: bad output", []string{"codify", "fdeploy/web", "--cluster", "a", "-o", "wide"}, `--output "wide": want yaml or json`},
		{"waive: no cluster", []string{"waive", "fdeploy/web", "--path", "/x", "--for", "1h", "--reason", "r"}, "--cluster or --selector is required"},
		{"waive: clusters and a selector", append(waive, "-l", "env=lab"), "--cluster and --selector cannot both be given"},
		{"waive: a selector that does not parse", []string{"waive", "fdeploy/web", "-l", "env in lab", "--path", "/x", "--for", "1h", "--reason", "r"}, `--selector "env in lab"`},
		{"waive: no path", []string{"waive", "fdeploy/web", "--cluster", "a", "--for", "1h", "--reason", "r"}, "--path is required"},
		{"waive: no duration", []string{"waive", "fdeploy/web", "--cluster", "a", "--path", "/x", "--reason", "r"}, "--for is required"},
		{"waive: too long", append(waive, "--for", "31d"), `invalid argument "31d" for "--for"`},
		{"waive: longer than the maximum", append(waive, "--for", "745h"), "--for 745h0m0s is longer than --max-waiver-duration 720h0m0s"},
		{"waive: no reason", []string{"waive", "fdeploy/web", "--cluster", "a", "--path", "/x", "--for", "1h"}, "--reason is required"},
		{"waive: a negative wait", []string{"waive", "fdeploy/web", "--cluster", "a", "--path", "/x", "--for", "1h", "--reason", "r", "--wait", "-1s"}, "--wait must not be negative"},
		{"waive: not KIND/NAME", []string{"waive", "web", "--cluster", "a"}, `"web" is not KIND/NAME`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, append(tt.args, "--host-kubeconfig", kc)...)
		})
	}
}

// TestWaiverFromFlags: the waiver written expires --for from now, to the
// second, with the clusters, paths, reason and owner given.
func TestWaiverFromFlags(t *testing.T) {
	now := time.Date(2026, 12, 20, 12, 0, 0, 500_000_000, time.UTC)
	o := &waiveOptions{clusters: []string{"a", "b"}, paths: []string{"/data/mode"}, lasts: 4 * time.Hour, reason: "valve maintenance", owner: "ops@example.com"}
	w := o.waiver().Of(now)
	if !w.Expires.Time.Equal(time.Date(2026, 12, 20, 16, 0, 0, 0, time.UTC)) || len(w.Clusters) != 2 || w.Clusters[1] != "b" ||
		len(w.Paths) != 1 || w.Paths[0] != "/data/mode" || w.Reason != "valve maintenance" || w.Owner != "ops@example.com" {
		t.Errorf("waiver %+v", w)
	}
}

// TestWaiverBySelector: --selector becomes the waiver's clusterSelector,
// its equalities matchLabels and its sets matchExpressions.
func TestWaiverBySelector(t *testing.T) {
	o := &waiveOptions{selector: "env=lab,tier in (core,edge)", paths: []string{"/data/mode"}, lasts: time.Hour, reason: "lab tests"}
	w := o.waiver().Of(time.Now())
	sel := w.ClusterSelector
	if len(w.Clusters) != 0 || sel == nil || sel.MatchLabels["env"] != "lab" || len(sel.MatchExpressions) != 1 ||
		sel.MatchExpressions[0].Key != "tier" || sel.MatchExpressions[0].Operator != "In" || strings.Join(sel.MatchExpressions[0].Values, ",") != "core,edge" {
		t.Errorf("waiver %+v, selector %+v", w, sel)
	}
}
