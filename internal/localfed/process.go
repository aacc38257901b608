package localfed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// tailLines is how many log lines an error about a process quotes.
const tailLines = 20

// errAddrInUse marks a process that exited because its port was taken.
var errAddrInUse = errors.New("address already in use")

// process is one running program, its output copied to a log and kept in a
// tail for error messages.
type process struct {
	name string
	cmd  *exec.Cmd
	tail *tailBuffer
	done chan struct{}
	err  error // the result of Wait, set before done is closed
}

// startProcess starts path with args; its stdout and stderr go to log, which
// is closed when the process has exited.
func startProcess(name, path string, args []string, log io.WriteCloser) (*process, error) {
	return startProcessEnv(name, path, args, nil, log)
}

// startProcessEnv is startProcess with the environment env (nil: this
// process's).
func startProcessEnv(name, path string, args, env []string, log io.WriteCloser) (*process, error) {
	tail := newTailBuffer()
	out := io.MultiWriter(log, tail)
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = 5 * time.Second // bound the copy of output held open by a stray child
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, tail: tail, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes why the process exited, quoting the end of its log.
// It must only be called once the process has exited.
func (p *process) exitError() error {
	status := p.err
	if status == nil {
		status = errors.New("exit status 0")
	}
	tail := p.tail.lastLines(tailLines)
	err := fmt.Errorf("%s exited: %w; last log lines:\n%s", p.name, status, tail)
	if strings.Contains(tail, errAddrInUse.Error()) {
		return fmt.Errorf("%w: %w", errAddrInUse, err)
	}
	return err
}

// signal sends sig to the process unless it has already exited.
func (p *process) signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	return nil
}

// kill sends SIGKILL and waits for the process to exit.
func (p *process) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// stop sends SIGTERM and waits for the process to exit. When ctx ends first,
// it kills the process and returns an error wrapping the context's.
func (p *process) stop(ctx context.Context) error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return errors.Join(err, p.kill())
	}
	if canFreeze {
		_ = p.signal(thawSignal) // a frozen process acts on SIGTERM once continued
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		if err := p.kill(); err != nil {
			return err
		}
		return fmt.Errorf("%s did not exit after SIGTERM, killed it: %w", p.name, context.Cause(ctx))
	}
}

// terminate stops the process, killing it after grace; unlike stop, having
// to kill it is not an error.
func (p *process) terminate(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := p.stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// waitUntil polls probe until it succeeds. It fails at once when the process
// exits, and at the deadline with the probe's last error, saying what the
// process failed to do (for example "is not ready") and quoting its log.
func (p *process) waitUntil(ctx context.Context, timeout, interval time.Duration, failure string, probe func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, p.exitError()
		}
		last = probe(ctx)
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case p.exited():
		return p.exitError()
	default:
		return fmt.Errorf("%s %s (last error: %v): %w; last log lines:\n%s",
			p.name, failure, last, err, p.tail.lastLines(tailLines))
	}
}
