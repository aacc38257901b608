package localfed

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// withPortPicker replaces freePort for the kube-apiservers of a federation.
func withPortPicker(pick func() (int, error)) Option {
	return func(o *options) { o.pickPort = pick }
}

// A port another program takes between its choice and the kube-apiserver's
// bind (another test binary of `go test ./...`, say) makes the kube-apiserver
// exit; Start starts it again on a new port. The test holds a port and hands
// it out first, so the race is lost every time, not by chance.
func TestStartRetriesTakenPort(t *testing.T) {
	t.Parallel()
	skipShort(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Close() })
	taken := held.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name       string
		takenPicks int32 // how many picks, first, return the taken port
		wantPicks  int32
		wantErr    string
	}{
		{name: "first port taken", takenPicks: 1, wantPicks: 2},
		{name: "every port taken", takenPicks: bindAttempts, wantPicks: bindAttempts, wantErr: strconv.Itoa(bindAttempts) + " free ports in a row were taken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var picks atomic.Int32
			pick := func() (int, error) {
				if picks.Add(1) <= tt.takenPicks {
					return taken, nil
				}
				return freePort()
			}
			dir := filepath.Join(t.TempDir(), "fed")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			fed, err := Start(ctx, WithDataDir(dir), WithControllers(), withPortPicker(pick))
			if fed != nil {
				t.Cleanup(func() {
					if err := fed.Stop(); err != nil {
						t.Errorf("Stop: %v", err)
					}
				})
			}
			if got := picks.Load(); got != tt.wantPicks {
				t.Errorf("%d ports picked, want %d", got, tt.wantPicks)
			}
			log, readErr := os.ReadFile(filepath.Join(dir, HostName, "apiserver.log"))
			if readErr != nil {
				t.Fatalf("reading the kube-apiserver's log: %v", readErr)
			}
			if n := strings.Count(string(log), "address already in use"); n < int(tt.takenPicks) {
				t.Errorf("the kube-apiserver's log says %d times that its port was taken, want %d", n, tt.takenPicks)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "address already in use") {
					t.Fatalf("Start: %v, want an error saying %q and quoting the kube-apiserver", err, tt.wantErr)
				}
				t.Logf("Start failed as expected: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if want := "https://127.0.0.1:" + strconv.Itoa(taken); fed.Host.Endpoint == want {
				t.Errorf("the host's endpoint is the taken port %s", want)
			}
			if _, err := mustClient(t, fed.Host).Discovery().ServerVersion(); err != nil {
				t.Errorf("the host does not answer at %s: %v", fed.Host.Endpoint, err)
			}
		})
	}
}

// A kube-apiserver's port lies below the kernel's ephemeral range, which
// programs asking for any port, and outgoing connections, are given ports
// from; and no other taker can reserve it, so that a restarted
// kube-apiserver finds it again.
func TestFreePortKeepsOutOfTheKernelsRange(t *testing.T) {
	t.Parallel()
	low, err := ephemeralLow()
	if err != nil || low-lowestPort < minReserved {
		t.Skipf("no ephemeral range to keep below (%v): freePort asks the kernel", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if port < lowestPort || port >= low {
		t.Errorf("freePort gave %d, want a port in %d-%d", port, lowestPort, low-1)
	}
	lock, err := reserve(port)
	if err != nil || lock != nil {
		t.Errorf("port %d could be reserved again (%v): another program would take it", port, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("the port freePort gave cannot be listened on: %v", err)
	}
	_ = l.Close()
}
