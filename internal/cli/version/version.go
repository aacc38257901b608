// Package version implements `fedwarden version`: the build's version, the
// commit it was built from and the Go version.
package version

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// Version is the release version; release builds set it with
// -ldflags "-X github.com/fedwarden/fedwarden/internal/cli/version.Version=v0.1.0".
var Version = "v0.0.0-dev"

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the Info of the running binary.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if build, ok := debug.ReadBuildInfo(); ok {
		for _, s := range build.Settings {
			if s.Key == "vcs.revision" {
				info.Commit = s.Value
			}
		}
	}
	return info
}

// NewCommand returns `fedwarden version`.
func NewCommand(s streams.IO) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of fedwarden",
		Args:  cmdline.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return run(s, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: empty for text, or json")
	return cmd
}

func run(s streams.IO, output string) error {
	info := Get()
	switch output {
	case "":
		_, err := fmt.Fprintf(s.Out, "fedwarden %s (commit %s, %s, %s)\n", info.Version, orUnknown(info.Commit), info.GoVersion, info.Platform)
		return err
	case "json":
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	default:
		return streams.UsageError(fmt.Errorf("--output %q is not supported: use json or leave it empty", output))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
