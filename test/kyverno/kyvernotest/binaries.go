package kyvernotest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	modulePath = "github.com/fedwarden/fedwarden"
	binDirEnv  = "FEDWARDEN_BIN_DIR"
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
func BinDir() (string, error) {
	if dir := os.Getenv(binDirEnv); dir != "" {
		return dir, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("finding the binaries (set %s): %w", binDirEnv, err)
	}
	return filepath.Join(root, "bin"), nil
}

// ModuleRoot is the directory of Fedwarden's go.mod, above the working
// directory.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the module root: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		ok, err := declaresModule(filepath.Join(d, "go.mod"))
		if err != nil {
			return "", err
		}
		if ok {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s above %s", modulePath, wd)
		}
	}
}

// declaresModule reports whether the go.mod file at path declares the
// Fedwarden module. A missing file declares nothing.
func declaresModule(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading go.mod: %w", err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], "\"`") == modulePath, nil
		}
	}
	if err := scanner.Err(); err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	return false, nil
}

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
