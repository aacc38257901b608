package fedtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// Environment variables of the browser tests.
const (
	// ChromiumEnv names the Chromium binary (default DefaultChromium).
	ChromiumEnv = "FEDWARDEN_CHROMIUM"
	// RequireBrowserEnv, set to anything, makes a missing Chromium fail a
	// browser test instead of skipping it: make test sets it, after make
	// tools has installed the browser.
	RequireBrowserEnv = "FEDWARDEN_REQUIRE_BROWSER"
	// ScreenshotsEnv names the directory Page.Screenshot writes PNGs to; a
	// relative one is taken from the root of the module. Unset, no
	// screenshot is written.
	ScreenshotsEnv = "FEDWARDEN_SCREENSHOTS"
)

// DefaultChromium is Debian's chromium, which make tools installs.
const DefaultChromium = "/usr/bin/chromium"

// BrowserTimeout bounds each Page.Do and RunPage: generous, for a starved
// machine. A wait for something slower takes its own context from
// Page.Context.
const BrowserTimeout = time.Minute

// Browser is a headless Chromium that a test drives with chromedp. It runs
// with a profile of its own under the test's temporary directory, and may
// resolve no host name: every name but 127.0.0.1 fails to resolve
// (--host-resolver-rules), and background services that would call out
// (sync, component and Safe Browsing updates, QUIC, proxies) are off, so
// that it sends nothing outside loopback. Each Page is a tab of it.
type Browser struct {
	ctx     context.Context // the first tab, whose first Run started the browser
	logPath string
}

// StartBrowser starts headless Chromium for t and stops it when t ends.
// Without the binary (ChromiumEnv, else DefaultChromium) it skips t, or
// fails it when RequireBrowserEnv is set.
func StartBrowser(t testing.TB) *Browser {
	t.Helper()
	path := ChromiumPath()
	if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		msg := fmt.Sprintf("no Chromium at %s (make browser installs Debian's chromium; %s names another binary)", path, ChromiumEnv)
		if os.Getenv(RequireBrowserEnv) != "" {
			t.Fatalf("%s, and %s is set", msg, RequireBrowserEnv)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	b := &Browser{logPath: filepath.Join(dir, "chromium.log")}
	logFile, err := os.Create(b.logPath)
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication"),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(logFile),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b.ctx = ctx
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		logFile.Close()
		if t.Failed() {
			t.Logf("Chromium's output ends with:\n%s", browserTail(b.logPath))
		}
	})
	// The first Run starts the browser, for as long as ctx lives: with no
	// timeout, which would stop the browser with it.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err = <-started:
	case <-time.After(BrowserTimeout):
		err = fmt.Errorf("the browser did not start within %s", BrowserTimeout)
	}
	if err != nil {
		t.Fatalf("starting Chromium %s: %v; its output ends with:\n%s", path, err, browserTail(b.logPath))
	}
	return b
}

// ChromiumPath is the Chromium the browser tests run: ChromiumEnv, else
// DefaultChromium.
func ChromiumPath() string {
	if p := os.Getenv(ChromiumEnv); p != "" {
		return p
	}
	return DefaultChromium
}

// browserTail is the end of Chromium's output, without its complaints that
// there is no D-Bus, which a headless machine does not need.
func browserTail(path string) string {
	data, _ := os.ReadFile(path)
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, ":ERROR:dbus/") {
			lines = append(lines, l)
		}
	}
	out := strings.Join(lines, "\n")
	return out[max(0, len(out)-4096):]
}

func tail(path string) []byte {
	data, _ := os.ReadFile(path)
	return data[max(0, len(data)-4096):]
}

// Page is a tab of a Browser. It keeps every message the page writes to the
// console, every exception nothing caught, and every entry of the browser
// log (failed loads among them), from the moment it opens.
type Page struct {
	ctx context.Context

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
	taken    int // the errors TakeConsoleErrors has returned
}

// NewPage opens a tab, closed when t ends.
func (b *Browser) NewPage(t testing.TB) *Page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	p := &Page{ctx: ctx}
	// Console opens the tab and subscribes before it returns.
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.messages = append(p.messages, m)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if err := p.Do(); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return p
}

// Context is the page's chromedp context, for an action that needs a
// deadline of its own: derive it with context.WithTimeout.
func (p *Page) Context() context.Context { return p.ctx }

// Do runs actions in the page, within BrowserTimeout.
func (p *Page) Do(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(p.ctx, BrowserTimeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// RunPage runs an action that returns a value in p, within BrowserTimeout.
func RunPage[T any](p *Page, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, BrowserTimeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// Console returns the messages seen so far.
func (p *Page) Console() []chromedp.ConsoleMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]chromedp.ConsoleMessage(nil), p.messages...)
}

// ConsoleErrors returns the errors seen so far, each with where it came
// from: calls of console.error and console.assert, exceptions nothing
// caught (unhandled promise rejections among them), and error entries of
// the browser log, such as a resource that failed to load.
func (p *Page) ConsoleErrors() []string {
	var errs []string
	for _, m := range p.Console() {
		if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException && m.Type != "assert" {
			continue
		}
		where := m.URL
		if where != "" {
			where = fmt.Sprintf(" (%s:%d)", where, m.Line+1)
		}
		errs = append(errs, m.String()+where)
	}
	return errs
}

// TakeConsoleErrors returns the errors (as ConsoleErrors) seen since its
// last call, so that a test checking after each step names each once.
func (p *Page) TakeConsoleErrors() []string {
	errs := p.ConsoleErrors()
	p.mu.Lock()
	defer p.mu.Unlock()
	n := min(p.taken, len(errs))
	p.taken = len(errs)
	return errs[n:]
}

// Screenshot writes a PNG of the whole page to name.png in the directory
// ScreenshotsEnv names, and returns its path; without ScreenshotsEnv it
// writes nothing and returns "".
func (p *Page) Screenshot(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		root, err := localfed.ModuleRoot()
		if err != nil {
			t.Fatalf("finding where %s=%s is: %v", ScreenshotsEnv, dir, err)
		}
		dir = filepath.Join(root, dir)
	}
	png, err := RunPage(p, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("taking the screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
	return path
}

// WaitFor polls the JavaScript expression in the page until it is true, for
// at most d, and returns how long that took. It is evaluated every 50 ms;
// an exception thrown by it counts as false.
func (p *Page) WaitFor(d time.Duration, expression string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	start := time.Now()
	js := fmt.Sprintf(`(() => { try { return !!(%s); } catch (e) { return false; } })()`, expression)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return time.Since(start), nil
		}
		if ctx.Err() != nil {
			return time.Since(start), fmt.Errorf("waited %s for %s: %w", d, expression, errors.Join(err, ctx.Err()))
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Console is a running `fedwarden console`, serving on 127.0.0.1.
type Console struct {
	// URL is where it serves: 127.0.0.1, on the port it was given.
	URL string
	// LogPath is its output.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
}

// consoleStartTimeout bounds how long the console may take to answer once
// started.
const consoleStartTimeout = time.Minute

// StartConsole runs `bin console --address 127.0.0.1:PORT args...` on a
// free port, logging to a file in dir, and waits until it answers HTTP. As
// with the controller-manager (see start), a port taken by another program
// before the console binds it makes it start again on another, a few
// times. The process gets no KUBECONFIG: args name what it reads.
func StartConsole(bin, dir string, args ...string) (*Console, error) {
	const attempts = 5
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		c := &Console{URL: "http://" + addr, LogPath: filepath.Join(dir, fmt.Sprintf("console-%d.log", port)), done: make(chan struct{})}
		logFile, err := os.Create(c.LogPath)
		if err != nil {
			return nil, fmt.Errorf("creating the console's log: %w", err)
		}
		c.cmd = exec.Command(bin, append([]string{"console", "--address", addr}, args...)...)
		c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
		c.cmd.Env = append(withoutProxies(os.Environ()), "KUBECONFIG=/nonexistent", "NO_PROXY=127.0.0.1")
		c.cmd.SysProcAttr = sysProcAttr()
		if err := c.cmd.Start(); err != nil {
			logFile.Close()
			return nil, fmt.Errorf("starting the console: %w", err)
		}
		go func() {
			_ = c.cmd.Wait()
			logFile.Close()
			close(c.done)
		}()
		err = c.waitServing()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, errConsoleExited) || !strings.Contains(string(tail(c.LogPath)), "address already in use") || attempt == attempts {
			return nil, err
		}
	}
}

var errConsoleExited = errors.New("the console exited")

// waitServing waits until the console answers an HTTP request.
func (c *Console) waitServing() error {
	deadline := time.After(consoleStartTimeout)
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for {
		resp, err := client.Get(c.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%w before it served %s; its log ends with:\n%s", errConsoleExited, c.URL, tail(c.LogPath))
		case <-deadline:
			_ = c.Stop()
			return fmt.Errorf("the console did not serve %s within %s; its log ends with:\n%s", c.URL, consoleStartTimeout, tail(c.LogPath))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the console with SIGTERM, and SIGKILL after 10 s. It returns an
// error when the console had exited on its own, or did not stop cleanly.
func (c *Console) Stop() error {
	select {
	case <-c.done:
		return fmt.Errorf("the console had exited before it was stopped (%v); its log ends with:\n%s", c.cmd.ProcessState, tail(c.LogPath))
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return errors.New("the console ignored SIGTERM for 10s and was killed")
	}
	if !c.cmd.ProcessState.Success() {
		return fmt.Errorf("the console exited with %v on SIGTERM; its log ends with:\n%s", c.cmd.ProcessState, tail(c.LogPath))
	}
	return nil
}
