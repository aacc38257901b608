package inprocess

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/egress"
)

func TestRefusals(t *testing.T) {
	refused := `INFO	egress	` + egress.RefusedMessage + `	{"cluster": "member-1"}`
	long := `INFO	controller	Reconciling	{"object": "` + strings.Repeat("x", 100*1024) + `"}`
	for _, tc := range []struct {
		name string
		log  []string
		want []string
	}{
		{name: "empty", log: nil, want: nil},
		{name: "nothing refused", log: []string{"INFO	controller	Starting workers"}, want: nil},
		{name: "one refusal among other lines", log: []string{"INFO	controller	Starting workers", refused, "INFO	controller	Reconciled"}, want: []string{refused}},
		{name: "a refusal after a long line", log: []string{long, refused}, want: []string{refused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "controllers.log")
			if err := os.WriteFile(path, []byte(strings.Join(tc.log, "\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := refusals(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("refusals = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRefusalsOfAMissingLog(t *testing.T) {
	if _, err := refusals(filepath.Join(t.TempDir(), "none.log")); err == nil {
		t.Error("refusals of a missing log: no error")
	}
}
