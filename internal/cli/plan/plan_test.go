package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/planreport"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/streams"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	host := []string{"--host-kubeconfig", kc}
	dir := t.TempDir()
	two := filepath.Join(dir, "two.yaml")
	writeFile(t, two, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {name: a}\n---\n"+
		"apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {name: b}\n")
	noKind := filepath.Join(dir, "nokind.yaml")
	writeFile(t, noKind, "metadata: {name: a}\n")
	empty := t.TempDir()
	writeFile(t, filepath.Join(empty, "notes.txt"), "not a manifest\n")
	noName := filepath.Join(dir, "two-noname.yaml")
	writeFile(t, noName, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {name: a}\n---\n"+
		"apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {}\n")
	garbage := filepath.Join(dir, "garbage.json")
	writeFile(t, garbage, "{\"apiVersion\": ")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "nothing to plan", args: host, wantErr: "plan needs -f FILE, Federated<Kind> manifests, or KIND/NAME"},
		{name: "both", args: append([]string{"fdeploy/web", "-f", two}, host...), wantErr: "plan takes -f FILE or KIND/NAME, not both"},
		{name: "two arguments", args: append([]string{"fdeploy/web", "fdeploy/api"}, host...), wantErr: "plan takes one argument"},
		{name: "not KIND/NAME", args: append([]string{"web"}, host...), wantErr: `"web" is not KIND/NAME`},
		{name: "missing file", args: append([]string{"-f", filepath.Join(dir, "nope.yaml")}, host...), wantErr: "nope.yaml: no such file or directory"},
		{name: "a directory without manifests", args: append([]string{"-f", empty}, host...), wantErr: "the directory holds no .yaml, .yml or .json file"},
		{name: "the second object without a name", args: append([]string{"-f", noName}, host...), wantErr: "two-noname.yaml (object 2): the object has no metadata.name"},
		{name: "empty standard input", args: append([]string{"-f", "-"}, host...), wantErr: "-f -: holds no object"},
		{name: "no kind", args: append([]string{"-f", noKind}, host...), wantErr: "the object has no apiVersion or kind"},
		{name: "not YAML", args: append([]string{"-f", garbage}, host...), wantErr: "not a YAML or JSON object"},
		{name: "bad output", args: append([]string{"fdeploy/web", "-o", "yaml"}, host...), wantErr: "-o yaml: unknown output format"},
		{name: "bad remediation", args: append([]string{"fdeploy/web", "--default-remediation", "Heal"}, host...), wantErr: "--default-remediation Heal: must be Enforce or Alert"},
		{name: "bad plugins", args: append([]string{"fdeploy/web", "--plugins", "*,-Nope"}, host...), wantErr: "--plugins"},
		{name: "bad namespace", args: append([]string{"fdeploy/web", "-n", "A_B"}, host...), wantErr: `-n: "A_B" is not a namespace name`},
		{name: "bad timeout", args: append([]string{"fdeploy/web", "--timeout", "0s"}, host...), wantErr: "--timeout 0s must be positive"},
		{name: "bad member networks", args: append([]string{"fdeploy/web", "--member-networks", "nope"}, host...), wantErr: "--member-networks"},
		{name: "unknown flag", args: append([]string{"fdeploy/web", "--frobnicate"}, host...), wantErr: "unknown flag: --frobnicate"},
		{name: "missing context", args: []string{"fdeploy/web", "--host-kubeconfig", kc, "--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

func TestUnreachableHostExitsWith2(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	_, stderr, code := clitest.Execute(NewCommand, "fdeploy/web", "-n", "shop", "--host-kubeconfig", kc, "--timeout", "2s")
	if code != 2 || !strings.Contains(stderr, "listing FederatedTypeConfigs") {
		t.Errorf("exit code %d, want 2; stderr %q", code, stderr)
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{err: nil, want: 0},
		{err: errors.New("boom"), want: 2},
		{err: streams.UsageError(errors.New("bad")), want: 2},
		{err: &streams.ExitError{Code: exitChanges, Err: errors.New("changes")}, want: 1},
	}
	for _, tt := range tests {
		if got := streams.ExitCode(exitCode(tt.err)); got != tt.want {
			t.Errorf("exitCode(%v): %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		clusters []planreport.Cluster
		want     int
		wantErr  string
	}{
		{name: "nothing changes", clusters: []planreport.Cluster{{Name: "a", Action: planreport.ActionUnchanged}, {Name: "b", Action: planreport.ActionNotPlaced}}, want: 0},
		{name: "a create", clusters: []planreport.Cluster{{Name: "a", Action: planreport.ActionCreate, DryRun: &planreport.DryRun{Status: planreport.DryRunAllowed, Allowed: true}}}, want: 1,
			wantErr: "FederatedDeployment shop/web would change 1 cluster: a"},
		{name: "a refusal", clusters: []planreport.Cluster{{Name: "a", Action: planreport.ActionUpdate, DryRun: &planreport.DryRun{Status: planreport.DryRunRefused, Message: "no"}}}, want: 1,
			wantErr: "REFUSED by the member in 1 cluster: a"},
		{name: "a conflict", clusters: []planreport.Cluster{{Name: "a", Action: planreport.ActionConflict}}, want: 1, wantErr: "conflicts with an object Fedwarden does not manage in 1 cluster: a"},
		{name: "an error wins", clusters: []planreport.Cluster{{Name: "a", Action: planreport.ActionCreate}, {Name: "b", Action: planreport.ActionUnknown, Error: "down"}}, want: 2,
			wantErr: "could not be planned in 1 cluster: b"},
	}
	for _, tt := range tests {
		r := &planreport.Report{Kind: "FederatedDeployment", Namespace: "shop", Name: "web", Clusters: tt.clusters}
		r.Summarize()
		err := outcome([]*planreport.Report{r})
		if got := streams.ExitCode(err); got != tt.want || (tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: exit code %d (%v), want %d with %q", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
	// Of several resources, an error in one wins over a change in another,
	// and each is named.
	changed := &planreport.Report{Kind: "FederatedNamespace", Namespace: "shop", Name: "shop", Clusters: []planreport.Cluster{{Name: "a", Action: planreport.ActionCreate}}}
	failed := &planreport.Report{Kind: "FederatedDeployment", Namespace: "shop", Name: "web", Clusters: []planreport.Cluster{{Name: "b", Action: planreport.ActionUnknown, Error: "down"}}}
	changed.Summarize()
	failed.Summarize()
	err := outcome([]*planreport.Report{changed, failed})
	if got := streams.ExitCode(err); got != 2 || !strings.Contains(err.Error(), "FederatedDeployment shop/web could not be planned in 1 cluster: b") {
		t.Errorf("two resources: exit code %d (%v), want 2 naming the one that could not be planned", got, err)
	}
	if err := outcome([]*planreport.Report{changed, changed}); streams.ExitCode(err) != 1 {
		t.Errorf("two resources, one changing: %v, want exit code 1", err)
	}
}

func TestDryRunOf(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		name string
		err  error
		want planreport.DryRunStatus
	}{
		{name: "allowed", err: nil, want: planreport.DryRunAllowed},
		{name: "policy", err: apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil), want: planreport.DryRunRefused},
		{name: "webhook or quota", err: apierrors.NewForbidden(gr, "web", errors.New("exceeded quota")), want: planreport.DryRunRefused},
		{name: "bad request", err: apierrors.NewBadRequest("no"), want: planreport.DryRunRefused},
		{name: "unauthorized", err: apierrors.NewUnauthorized("expired token"), want: planreport.DryRunFailed},
		{name: "timeout", err: apierrors.NewTimeoutError("slow", 1), want: planreport.DryRunFailed},
		{name: "server error", err: apierrors.NewInternalError(errors.New("etcd")), want: planreport.DryRunFailed},
		{name: "network", err: errors.New("connection refused"), want: planreport.DryRunFailed},
	}
	for _, tt := range tests {
		// The apply stage records the member's message and its status code.
		var pv propagation.Preview
		if tt.err != nil {
			pv.Message = "writing Deployment web to cluster member-1: " + tt.err.Error()
			var status apierrors.APIStatus
			if errors.As(tt.err, &status) {
				pv.Code = status.Status().Code
			}
		}
		got := dryRunOf(pv, "")
		if got.Status != tt.want || got.Allowed != (tt.want == planreport.DryRunAllowed) || (tt.err != nil && got.Message != pv.Message) {
			t.Errorf("%s: %+v, want %s", tt.name, got, tt.want)
		}
	}
	if got := dryRunOf(propagation.Preview{NamespaceMissing: true}, "no namespace"); got.Status != planreport.DryRunSkipped || got.Message != "no namespace" {
		t.Errorf("namespace missing: %+v, want Skipped", got)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
