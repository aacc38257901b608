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
