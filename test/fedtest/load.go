package fedtest

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/time/rate"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// Paced calls write(i) for i in [0, n) at qps calls per second, from up to
// 16 goroutines, as a load client would, and returns the first error.
func Paced(ctx context.Context, qps float64, n int, write func(i int) error) error {
	limiter := rate.NewLimiter(rate.Limit(qps), 1)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, 16)
	for i := range n {
		if err := limiter.Wait(ctx); err != nil {
			return err
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := write(i); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// APIServerPID returns the process id of the kube-apiserver serving c,
// found among the running processes by its binary and --secure-port, so
// that benchmarks can read its memory (ProcessMemory). Linux only.
func APIServerPID(c *localfed.Cluster) (int, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return 0, fmt.Errorf("parsing the endpoint of %s: %w", c.Name, err)
	}
	flag := []byte("--secure-port=" + u.Port())
	paths, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // the process has gone
		}
		args := bytes.Split(data, []byte{0})
		if filepath.Base(string(args[0])) != "kube-apiserver" {
			continue
		}
		for _, a := range args[1:] {
			if bytes.Equal(a, flag) {
				return strconv.Atoi(filepath.Base(filepath.Dir(p)))
			}
		}
	}
	return 0, fmt.Errorf("no kube-apiserver with %s runs for %s", flag, c.Name)
}
