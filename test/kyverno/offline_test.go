package kyverno

import (
	"bytes"
	"errors"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/test/kyverno/kyvernotest"
)

// cli returns the kyverno CLI and deploy/kyverno.
func cli(t *testing.T) (bin, deploy string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the kyverno CLI")
	}
	bin, err := kyvernotest.Binary(kyvernotest.CLI)
	if err != nil {
		t.Fatal(err)
	}
	deploy, err = kyvernotest.DeployDir()
	if err != nil {
		t.Fatal(err)
	}
	return bin, deploy
}

// runCLI runs the kyverno CLI and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("running kyverno %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), 0
}

// `kyverno test deploy/kyverno` passes every expected result of every
// kyverno-test.yaml there: the report policies fail the drifted sample CPVs
// (OutdatedTemplate, OutdatedOverrides, ModifiedOutOfBand, Missing,
// Unreachable) and pass the one in sync; the resync policies set the
// expected kubefed.io/resync value on the federated resources a re-apply
// heals and leave the others alone.
func TestKyvernoTestPasses(t *testing.T) {
	bin, deploy := cli(t)
	var tests []string
	err := filepath.WalkDir(deploy, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == "kyverno-test.yaml" {
			tests = append(tests, path)
		}
		return err
	})
	if err != nil || len(tests) == 0 {
		t.Fatalf("no kyverno-test.yaml under %s (%v)", deploy, err)
	}
	stdout, stderr, code := runCLI(t, bin, "test", deploy, "--remove-color", "--detailed-results")
	if code != 0 || !strings.Contains(stdout, " tests passed and 0 tests failed") {
		t.Fatalf("kyverno test %s: exit code %d\n%s\n%s", deploy, code, stdout, stderr)
	}
	if n := strings.Count(stdout, "Loading test"); n != len(tests) {
		t.Errorf("kyverno test loaded %d tests, want the %d kyverno-test.yaml files %v", n, len(tests), tests)
	}
	// A policy that matches nothing passes as "Excluded": a result that
	// checks nothing.
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, "Excluded") {
			t.Errorf("a result checks nothing (the policy does not match the resource):\n%s", line)
		}
	}
}

// report is the part of the report `kyverno apply --policy-report` prints
// that the test reads.
type report struct {
	Results []struct {
		Policy    string `json:"policy"`
		Result    string `json:"result"`
		Message   string `json:"message"`
		Resources []struct {
			Name string `json:"name"`
		} `json:"resources"`
	} `json:"results"`
}

// The report policies' messages name every drifted cluster with its state
// and Fedwarden's message; the CPV in sync passes. Both forms say the same.
func TestReportNamesClustersAndReasons(t *testing.T) {
	bin, deploy := cli(t)
	want := map[string][]string{
		"deployment-outdated-template":  {"1 of 2 clusters drifted from FederatedDeployment outdated-template", "eu-1: OutdatedTemplate (missed template version 3)"},
		"deployment-outdated-overrides": {"1 of 2 clusters drifted", "us-1: OutdatedOverrides (missed override version 4)"},
		"deployment-modified":           {"1 of 2 clusters drifted", "eu-1: ModifiedOutOfBand (changed in the member by kubectl-edit: /spec/template/spec/containers/0/image"},
		"deployment-unreachable":        {"1 of 2 clusters drifted", "us-1: Unreachable (cluster us-1 is not Ready"},
		"deployment-missing":            {"1 of 2 clusters drifted", "eu-1: Missing (the copy was deleted in the member"},
		"deployment-in-sync":            nil,
	}
	for _, policy := range []string{"cel/report-drift.yaml", "legacy/report-drift.yaml"} {
		t.Run(filepath.Dir(policy), func(t *testing.T) {
			stdout, stderr, code := runCLI(t, bin, "apply", filepath.Join(deploy, policy), "--resource", filepath.Join(deploy, "test", "cpvs.yaml"), "--policy-report")
			start := strings.Index(stdout, "apiVersion:")
			if start < 0 {
				t.Fatalf("kyverno apply printed no report: exit code %d\n%s\n%s", code, stdout, stderr)
			}
			var r report
			if err := yaml.Unmarshal([]byte(stdout[start:]), &r); err != nil {
				t.Fatalf("reading the report: %v\n%s", err, stdout)
			}
			seen := map[string]bool{}
			for _, res := range r.Results {
				name := res.Resources[0].Name
				parts, ok := want[name]
				if !ok {
					continue
				}
				seen[name] = true
				if wantResult := map[bool]string{true: "pass", false: "fail"}[parts == nil]; res.Result != wantResult {
					t.Errorf("%s: result %s, want %s (%s)", name, res.Result, wantResult, res.Message)
				}
				for _, p := range parts {
					if !strings.Contains(res.Message, p) {
						t.Errorf("%s: message %q does not say %q", name, res.Message, p)
					}
				}
			}
			for name := range want {
				if !seen[name] {
					t.Errorf("no result for %s:\n%s", name, stdout)
				}
			}
		})
	}
}
