package version

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/streams"
)

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		output   string
		wantCode int
		check    func(t *testing.T, out string)
	}{
		{name: "text", check: func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "fedwarden "+Version+" (") {
				t.Errorf("output %q does not start with the version", out)
			}
		}},
		{name: "json", output: "json", check: func(t *testing.T, out string) {
			var info Info
			if err := json.Unmarshal([]byte(out), &info); err != nil {
				t.Fatalf("output is not JSON: %v", err)
			}
			if info.Version != Version || info.GoVersion == "" {
				t.Errorf("info = %+v", info)
			}
		}},
		{name: "bad format", output: "yaml", wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := run(streams.IO{Out: &out}, tt.output)
			if code := streams.ExitCode(err); code != tt.wantCode {
				t.Fatalf("run error = %v: exit code %d, want %d", err, code, tt.wantCode)
			}
			if tt.check != nil {
				tt.check(t, out.String())
			}
		})
	}
}
