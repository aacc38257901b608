package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
)

// `fedwarden up --members 2 --with-samples` comes up, the sample reaches
// both members, `fedwarden status` reports the federation, and Ctrl-C
// (SIGINT) stops every process it started.
func TestUp(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "up")
	cmd := exec.Command(fedwardenBin, "up", "--members", "2", "--with-samples", "--data-dir", dir)
	cmd.Env = append(os.Environ(), "FEDWARDEN_BIN_DIR="+os.Getenv("FEDWARDEN_BIN_DIR"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	up := make(chan string, 1)
	go func() {
		var out strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "Ctrl-C stops everything") {
				up <- out.String()
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var printed string
	select {
	case printed = <-up:
	case err := <-exited:
		t.Fatalf("fedwarden up exited (%v):\n%s", err, stderr.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("fedwarden up did not come up in 3 minutes:\n%s", stderr.String())
	}
	host := filepath.Join(dir, "clusters", "host", "kubeconfig")
	if !strings.Contains(printed, "export KUBECONFIG="+host) || !strings.Contains(stderr.String(), "• join the members… done") {
		t.Errorf("fedwarden up printed:\n%s\n%s", stderr.String(), printed)
	}
	for _, m := range []string{"member-1", "member-2"} {
		checkSampleIn(t, filepath.Join(dir, "clusters", m, "kubeconfig"), m)
	}
	r := runFedwarden(t, "status", "--host-kubeconfig", host)
	for _, want := range []string{"member-1   True    Push", "member-2   True    Push", "deployments.apps   FederatedDeployment   Enabled       Running", "0 drifted"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("fedwarden status does not show %q:\n%s", want, r)
		}
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("fedwarden up after Ctrl-C: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("fedwarden up did not stop within 60 s of Ctrl-C:\n%s", stderr.String())
	}
	if left := processesUsing(t, dir); len(left) > 0 {
		t.Errorf("processes left behind after Ctrl-C: %v", left)
	}
}

// checkSampleIn checks that a member has the sample Deployment, with its
// cluster's overrides.
func checkSampleIn(t *testing.T, kubeconfig, member string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cfg)
	d := &appsv1.Deployment{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "demo", Name: "web"}, d); err != nil {
		t.Fatalf("%s has no sample Deployment: %v", member, err)
	}
	wantReplicas, wantImage := int32(2), "nginx:1.27"
	switch member {
	case "member-1":
		wantReplicas = 3
	case "member-2":
		wantImage = "nginx:1.28"
	}
	if *d.Spec.Replicas != wantReplicas || d.Spec.Template.Spec.Containers[0].Image != wantImage {
		t.Errorf("%s's sample: replicas %d, image %s; want %d, %s", member, *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image, wantReplicas, wantImage)
	}
}

// processesUsing lists the processes whose command line names dir.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("cannot list processes: %v", err)
	}
	var found []string
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if line := strings.ReplaceAll(string(raw), "\x00", " "); strings.Contains(line, dir) {
			found = append(found, fmt.Sprintf("%s: %.120s", e.Name(), line))
		}
	}
	return found
}
