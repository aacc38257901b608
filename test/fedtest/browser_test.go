package fedtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserSeesConsoleErrors: the page's console errors, its uncaught
// exceptions and its failed loads are all reported, its plain logs are
// not errors, no host name resolves (only 127.0.0.1 is reached), and a
// screenshot is a PNG.
func TestBrowserSeesConsoleErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium: run without -short")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><html><head><link rel="icon" href="data:,"></head><body><p id="x">hello</p>
<img src="/missing.png">
<script>
console.log("just a log");
console.error("broken", 42);
setTimeout(() => { throw new Error("uncaught"); }, 0);
fetch("http://localhost:%d/", {mode: "no-cors"}).then(() => { document.body.dataset.lookup = "resolved"; }, () => { document.body.dataset.lookup = "refused"; });
document.body.dataset.ready = "true";
</script></body></html>`, l.Addr().(*net.TCPAddr).Port)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	screenshots := t.TempDir()
	t.Setenv(ScreenshotsEnv, screenshots)
	page := StartBrowser(t).NewPage(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/", l.Addr().(*net.TCPAddr).Port)
	if err := page.Do(chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	if _, err := page.WaitFor(30*time.Second, `document.body.dataset.ready === "true" && document.body.dataset.lookup`); err != nil {
		t.Fatal(err)
	}
	// The server answers on 127.0.0.1 only by that address: no name
	// resolves, not even localhost.
	lookup, err := RunPage(page, chromedp.Evaluate[string](`document.body.dataset.lookup`))
	if err != nil || lookup != "refused" {
		t.Errorf("fetching from localhost: %q (%v), want refused", lookup, err)
	}
	text, err := RunPage(page, chromedp.Text(chromedp.ID("x")))
	if err != nil || text != "hello" {
		t.Fatalf("text of #x: %q, %v", text, err)
	}

	want := []string{"error: broken 42", "Uncaught Error: uncaught", "missing.png"}
	var errs []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		errs = page.ConsoleErrors()
		if allFound(errs, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !allFound(errs, want) {
		t.Errorf("console errors %q, want one holding each of %q", errs, want)
	}
	if slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "just a log") }) {
		t.Errorf("a console.log was reported as an error: %q", errs)
	}
	taken := page.TakeConsoleErrors()
	if !allFound(taken, want) {
		t.Errorf("TakeConsoleErrors() = %q, want every error so far", taken)
	}
	// A second call names none of them again (an error arriving late may
	// be new).
	if again := page.TakeConsoleErrors(); len(again) > len(page.ConsoleErrors())-len(taken) {
		t.Errorf("TakeConsoleErrors() again = %q after %q, want only new ones", again, taken)
	}

	path := page.Screenshot(t, "page")
	if path != filepath.Join(screenshots, "page.png") {
		t.Fatalf("screenshot written to %q", path)
	}
	png, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("the screenshot is not a PNG (%d bytes, %v)", len(png), err)
	}
}

// allFound tells whether each of want is part of one of got.
func allFound(got, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
			return false
		}
	}
	return true
}
