package root

import (
	"bytes"
	"strings"
	"testing"
)

func TestExecute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		args             []string
		wantCode         int
		wantOut, wantErr string
	}{
		{name: "version", args: []string{"version"}, wantOut: "fedwarden v"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 1, wantErr: `Error: unknown command "frobnicate"`},
		{name: "bad flag value has its own exit code", args: []string{"version", "-o", "xml"}, wantCode: 2, wantErr: `Error: --output "xml" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := Execute(tt.args, strings.NewReader(""), &out, &errOut)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout %q does not contain %q", out.String(), tt.wantOut)
			}
			if !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", errOut.String(), tt.wantErr)
			}
		})
	}
}
