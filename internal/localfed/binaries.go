package localfed

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	modulePath = "github.com/fedwarden/fedwarden"
	binDirEnv  = "FEDWARDEN_BIN_DIR"
)

// binaries are the paths of the programs a federation runs.
type binaries struct {
	etcd              string
	apiserver         string
	controllerManager string // empty when kube-controller-manager does not run
}

// findBinaries locates etcd, kube-apiserver and, when withControllerManager,
// kube-controller-manager in dir, or in the default directory when dir is
// empty.
func findBinaries(dir string, withControllerManager bool) (binaries, error) {
	if dir == "" {
		var err error
		if dir, err = defaultBinDir(); err != nil {
			return binaries{}, err
		}
	}
	b := binaries{etcd: filepath.Join(dir, "etcd"), apiserver: filepath.Join(dir, "kube-apiserver")}
	paths := []string{b.etcd, b.apiserver}
	if withControllerManager {
		b.controllerManager = filepath.Join(dir, "kube-controller-manager")
		paths = append(paths, b.controllerManager)
	}
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return binaries{}, fmt.Errorf("%w (build it with hack/tools/build.sh, or set %s)", err, binDirEnv)
		}
		if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			return binaries{}, fmt.Errorf("%s is not an executable file", path)
		}
	}
	return b, nil
}

// defaultBinDir is $FEDWARDEN_BIN_DIR, else bin/ at the root of the module.
func defaultBinDir() (string, error) {
	return BinDir()
}

// BinDir is where the tools hack/tools/build.sh builds are:
// $FEDWARDEN_BIN_DIR, else bin/ at the root of the Fedwarden module above
// the working directory.
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

// ModuleRoot is the directory of Fedwarden's go.mod, at or above the
// working directory.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the module root: %w", err)
	}
	return moduleRoot(wd)
}

// moduleRoot walks up from dir to the directory whose go.mod declares the
// Fedwarden module.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		ok, err := declaresModule(filepath.Join(d, "go.mod"))
		if err != nil {
			return "", err
		}
		if ok {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s above %s", modulePath, dir)
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
