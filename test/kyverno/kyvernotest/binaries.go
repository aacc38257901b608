package kyvernotest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

const (
	binDirEnv = "FEDWARDEN_BIN_DIR"
	// kyvernoModule is the Go module whose CRDs and commands are Kyverno's.
	kyvernoModule = "github.com/kyverno/kyverno"
)

// Binary names in the bin directory, as hack/tools/build.sh names them.
const (
	CLI        = "kyverno"
	Admission  = "kyverno-admission"
	Background = "kyverno-background"
	// Reports is cmd/reports-controller of Kyverno's module, which turns
	// admission and background results into PolicyReports.
	Reports = "kyverno-reports"
)

// Binary returns the path of the named program in the bin directory
// ($FEDWARDEN_BIN_DIR, else bin/ at the root of the module), or an error
// that says how to get it.
func Binary(name string) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w; build it with make tools (hack/tools/build.sh), or set %s", name, err, binDirEnv)
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", path)
	}
	return path, nil
}

// BinDir is $FEDWARDEN_BIN_DIR, else bin/ at the root of the module.
func BinDir() (string, error) { return localfed.BinDir() }

// ModuleRoot is the directory of Fedwarden's go.mod, above the working
// directory.
func ModuleRoot() (string, error) { return localfed.ModuleRoot() }

// ModuleDir is the directory of the Kyverno module that hack/tools/kyverno
// pins (its CRDs are under config/crds). It needs the module downloaded,
// which make tools does; then it works offline.
func ModuleDir() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", kyvernoModule)
	cmd.Dir = filepath.Join(root, "hack", "tools", "kyverno")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		return "", fmt.Errorf("finding the %s module (run make tools): %w", kyvernoModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("the %s module is not downloaded (run make tools)", kyvernoModule)
	}
	return dir, nil
}
