package fedtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/egress"
)

// TestUnexpectedRefusals: a refusal in the controller-manager's log is an
// error unless its cluster was named by ExpectRefusals.
func TestUnexpectedRefusals(t *testing.T) {
	line := func(cluster string) string {
		return `{"level":"info","logger":"egress","msg":"` + egress.RefusedMessage + `","cluster":"` + cluster + `","address":"192.0.2.1:6443"}` // loopback-check: not dialed
	}
	tests := []struct {
		name     string
		log      []string
		expected []string
		wantErr  string
	}{
		{name: "none", log: []string{`{"msg":"Starting"}`}},
		{name: "expected", log: []string{line("guarded")}, expected: []string{"guarded"}},
		{name: "unexpected", log: []string{line("guarded"), line("stray")}, expected: []string{"guarded"}, wantErr: `"cluster":"stray"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cm.log")
			if err := os.WriteFile(path, []byte(strings.Join(tt.log, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cm := &ControllerManager{LogPath: path}
			cm.ExpectRefusals(tt.expected...)
			err := cm.UnexpectedRefusals()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), `"cluster":"guarded"`)):
				t.Errorf("got %v, want an error naming only %s", err, tt.wantErr)
			}
		})
	}
}

// TestMetricsScheme: a process run with --metrics-secure serves HTTPS.
func TestMetricsScheme(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "http"},
		{[]string{"--metrics-secure"}, "https"},
		{[]string{"--metrics-secure=true"}, "https"},
		{[]string{"--metrics-secure=false"}, "http"},
	} {
		if got := metricsScheme(tt.args); got != tt.want {
			t.Errorf("metricsScheme(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}

// TestDataRaces: a data race the race detector printed in the log is an
// error that shows the first report, and a clean log is none.
func TestDataRaces(t *testing.T) {
	report := strings.Join([]string{
		"==================",
		"WARNING: DATA RACE",
		"Read at 0x00c000123456 by goroutine 7:",
		"  github.com/fedwarden/fedwarden/internal/propagation.(*Reconciler).sync()",
		"==================",
	}, "\n")
	for _, tt := range []struct {
		name, log, wantErr string
	}{
		{name: "clean", log: `{"msg":"Starting"}`},
		{name: "two races", log: `{"msg":"Starting"}` + "\n" + report + "\n" + report, wantErr: "2 data race(s)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cm.log")
			if err := os.WriteFile(path, []byte(tt.log+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := (&ControllerManager{LogPath: path}).DataRaces()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "(*Reconciler).sync()")):
				t.Errorf("got %v, want an error saying %q with the first report", err, tt.wantErr)
			}
		})
	}
}

// TestOwnGoroutines: of the goroutine dump SIGQUIT leaves at the end of the
// log, the error of a controller-manager that would not stop holds the
// goroutines whose stacks pass through Fedwarden's code.
func TestOwnGoroutines(t *testing.T) {
	dir := t.TempDir()
	cm := &ControllerManager{LogPath: filepath.Join(dir, "cm.log")}
	if got := cm.ownGoroutines(); !strings.Contains(got, "reading the log") {
		t.Errorf("no log: got %q", got)
	}
	write := func(s string) {
		if err := os.WriteFile(cm.LogPath, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"msg":"Stopping and waiting for caches"}` + "\n")
	if got := cm.ownGoroutines(); got != "(no goroutine dump in the log)" {
		t.Errorf("no dump: got %q", got)
	}
	write(`{"msg":"Stopping and waiting for caches"}
SIGQUIT: quit
PC=0x47a1c1 m=0 sigcode=0

goroutine 1 [select]:
sigs.k8s.io/controller-runtime/pkg/manager.(*controllerManager).Start(...)

goroutine 77 [chan receive]:
github.com/fedwarden/fedwarden/internal/propagation.(*Controller).allFederated(...)
	/src/internal/propagation/controller.go:388

goroutine 90 [IO wait]:
internal/poll.runtime_pollWait(...)
`)
	got := cm.ownGoroutines()
	if !strings.Contains(got, "goroutine 77 [chan receive]") || strings.Contains(got, "goroutine 1 ") || strings.Contains(got, "goroutine 90") {
		t.Errorf("got %q; want goroutine 77 alone", got)
	}
}
