package kyvernotest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// process is one running Kyverno controller, logging to a file.
type process struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	logPath string
}

// startProcess runs bin with args and env added to the environment,
// logging to <dir>/<name>.log. It dies with the test process.
func startProcess(name, bin, dir string, env, args []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), logPath: logPath}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited tells whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process with SIGTERM, killing it after grace.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s ignored SIGTERM for %s and was killed", p.name, grace)
	}
}

// stopAll stops every process, at the same time.
func stopAll(procs []*process, grace time.Duration) error {
	errs := make(chan error, len(procs))
	for _, p := range procs {
		go func() { errs <- p.stop(grace) }()
	}
	var all []error
	for range procs {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// LogDir makes a directory for a bed's logs, removed when tb ends unless
// it failed: then its path is logged, to read the whole logs.
func LogDir(tb testing.TB) (string, error) {
	dir, err := os.MkdirTemp("", "kyvernotest-")
	if err != nil {
		return "", err
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir, nil
}

// tail returns the last n bytes of a file, for a failure message.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}
