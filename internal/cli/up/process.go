package up

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// child is a long-running fedwarden process up started: the
// controller-manager, or a Pull member's agent.
type child struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	logPath string
	// metricsURL and readyURL are its endpoints on 127.0.0.1.
	metricsURL, readyURL string
}

// startChild runs this binary with args, its metrics and probes on free
// ports, logging to <dir>/<name>.log.
func (b *bringer) startChild(name string, args ...string) (*child, error) {
	metrics, err := freePort()
	if err != nil {
		return nil, err
	}
	probes, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &child{name: name, done: make(chan struct{}), logPath: filepath.Join(b.dir, name+".log"),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics), readyURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", probes)}
	log, err := os.Create(c.logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the %s log: %w", name, err)
	}
	args = append(args, "--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(metrics), "--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(probes))
	c.cmd = exec.Command(b.self, args...)
	c.cmd.Stdout, c.cmd.Stderr = log, log
	c.cmd.SysProcAttr = sysProcAttr()
	if err := c.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting the %s: %w", name, err)
	}
	go func() {
		_ = c.cmd.Wait()
		log.Close()
		close(c.done)
	}()
	b.children = append(b.children, c)
	return c, nil
}

// bindAttempts is how many times startReady starts a child whose port was
// taken between freePort and its bind.
const bindAttempts = 5

// startReady starts a child as startChild does and waits until it is
// ready. The ports were free a moment before, but another program may
// take one before the child binds it: a child that exits with "address
// already in use" is started again on other ports, a few times.
func (b *bringer) startReady(ctx context.Context, name string, args ...string) (*child, error) {
	for attempt := 1; ; attempt++ {
		c, err := b.startChild(name, args...)
		if err != nil {
			return nil, err
		}
		err = c.waitReady(ctx)
		if err == nil || attempt == bindAttempts || !c.lostItsPort() {
			return c, err
		}
		b.children = slices.DeleteFunc(b.children, func(o *child) bool { return o == c })
	}
}

// lostItsPort reports whether the child has exited because a port it was
// given was taken.
func (c *child) lostItsPort() bool {
	select {
	case <-c.done:
	default:
		return false
	}
	log, err := os.ReadFile(c.logPath)
	return err == nil && bytes.Contains(log, []byte("address already in use"))
}

// waitReady polls the child's /readyz until it answers 200, the process
// ends, or ctx does.
func (c *child) waitReady(ctx context.Context) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.readyURL, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("the %s exited; see %s", c.name, c.logPath)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the %s to be ready (see %s): %w", c.name, c.logPath, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the child with SIGTERM, then SIGKILL after 15 s. Where SIGTERM
// cannot be sent (Windows), it kills the child at once.
func (c *child) stop() {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = c.cmd.Process.Kill()
	}
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
