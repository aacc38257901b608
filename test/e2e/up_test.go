//go:build linux

package e2e

import (
	"bufio"
	"context"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// `fedwarden up --members 2 --pull-members 1 --with-samples` comes up (the
// second member in Pull mode, with its agent), the sample reaches both
// members, `fedwarden status` reports the federation, and Ctrl-C
// (SIGINT) stops every process it started. Run again on the same
// --data-dir, it comes back with what it had.
func TestUp(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "up")
	first := startUp(t, dir)
	host := filepath.Join(dir, "clusters", "host", "kubeconfig")
	if !strings.Contains(first.printed, "export KUBECONFIG="+host) || !strings.Contains(first.stderr.String(), "• join the members… done") ||
		!strings.Contains(first.stderr.String(), "• start the agents of the Pull members… done") {
		t.Errorf("fedwarden up printed:\n%s\n%s", first.stderr.String(), first.printed)
	}
	for _, m := range []string{"member-1", "member-2"} {
		checkSampleIn(t, kubeconfigClient(t, filepath.Join(dir, "clusters", m, "kubeconfig")), m)
	}
	// A type controller reports Running once it has listed its resources,
	// which may come a moment after the sample has reached the members.
	wants := []string{"member-1   True    Push", "member-2   True    Pull", "deployments.apps   FederatedDeployment   Enabled       Running", "0 drifted"}
	poll.Eventually(t, time.Minute, "fedwarden status showing "+strings.Join(wants, ", "), func(context.Context) (bool, string) {
		r := runFedwarden(t, "status", "--host-kubeconfig", host)
		for _, want := range wants {
			if r.code != 0 || !strings.Contains(r.stdout, want) {
				return false, fmt.Sprintf("no %q in:\n%s", want, r)
			}
		}
		return true, ""
	})
	cpv, err := cpvOf(t.Context(), kubeconfigClient(t, host), "demo", "deployment-web")
	if err != nil {
		t.Fatal(err)
	}
	first.interrupt(t)

	second := startUp(t, dir)
	again, err := cpvOf(t.Context(), kubeconfigClient(t, host), "demo", "deployment-web")
	if err != nil || again.UID != cpv.UID {
		t.Errorf("after a second up on the same --data-dir, the sample's CPV is %v (%v), want the first run's %s", again.UID, err, cpv.UID)
	}
	checkSampleIn(t, kubeconfigClient(t, filepath.Join(dir, "clusters", "member-1", "kubeconfig")), "member-1")
	second.interrupt(t)
}

// upRun is a running `fedwarden up`.
type upRun struct {
	dir     string
	cmd     *exec.Cmd
	stderr  *strings.Builder
	printed string
	exited  chan error
}

// startUp runs `fedwarden up --members 2 --pull-members 1 --with-samples
// --data-dir dir` and
// waits until it says it is up.
func startUp(t *testing.T, dir string) *upRun {
	t.Helper()
	u := &upRun{dir: dir, stderr: &strings.Builder{}, exited: make(chan error, 1)}
	u.cmd = exec.Command(fedwardenBin, "up", "--members", "2", "--pull-members", "1", "--with-samples", "--data-dir", dir)
	stdout, err := u.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	u.cmd.Stderr = u.stderr
	u.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// up starts three kube-apiservers: in turn with the other starts.
	done, err := fedtest.StartSlot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
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
		u.exited <- u.cmd.Wait()
	}()
	t.Cleanup(func() { _ = u.cmd.Process.Kill() })
	select {
	case u.printed = <-up:
	case err := <-u.exited:
		t.Fatalf("fedwarden up exited (%v):\n%s", err, u.stderr.String())
	case <-time.After(3 * time.Minute):
		t.Fatalf("fedwarden up did not come up in 3 minutes:\n%s", u.stderr.String())
	}
	return u
}

// interrupt sends SIGINT, as Ctrl-C does, and checks that up exits cleanly
// and leaves no process behind.
func (u *upRun) interrupt(t *testing.T) {
	t.Helper()
	if err := u.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-u.exited:
		if err != nil {
			t.Errorf("fedwarden up after Ctrl-C: %v\n%s", err, u.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("fedwarden up did not stop within 60 s of Ctrl-C:\n%s", u.stderr.String())
	}
	if left := processesUsing(t, u.dir); len(left) > 0 {
		t.Errorf("processes left behind after Ctrl-C: %v", left)
	}
}

func kubeconfigClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, cfg)
}

// checkSampleIn checks that a member has the sample Deployment, with its
// cluster's overrides.
func checkSampleIn(t *testing.T, c client.Client, member string) {
	t.Helper()
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
