package localfed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// bindAttempts is how often a process is started again when its port turns
// out to be taken.
const bindAttempts = 5

// etcdServer is the etcd shared by every cluster of a federation.
type etcdServer struct {
	proc *process
	url  string
}

// startEtcd starts etcd with its data under dir and waits until it is healthy,
// choosing new ports when the chosen ones were taken meanwhile.
func startEtcd(ctx context.Context, e *env, dir string) (*etcdServer, error) {
	for attempt := 1; ; attempt++ {
		s, err := startEtcdOnce(ctx, e, dir)
		if err == nil || !errors.Is(err, errAddrInUse) || attempt == bindAttempts {
			return s, err
		}
	}
}

func startEtcdOnce(ctx context.Context, e *env, dir string) (*etcdServer, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	log, err := e.logs.open("etcd", filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	p, err := startProcess("etcd", e.bins.etcd, etcdArgs(filepath.Join(dir, "data"), clientURL, peerPort), log)
	if err != nil {
		return nil, err
	}
	if err := waitEtcdHealthy(ctx, clientURL, p, e.startTimeout); err != nil {
		return nil, errors.Join(err, p.kill())
	}
	return &etcdServer{proc: p, url: clientURL}, nil
}

func etcdArgs(dataDir, clientURL string, peerPort int) []string {
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	return []string{
		"--name=default",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
}

// waitEtcdHealthy polls etcd's /health until it reports healthy.
func waitEtcdHealthy(ctx context.Context, url string, p *process, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return p.waitUntil(ctx, timeout, 50*time.Millisecond, "is not healthy", func(ctx context.Context) error {
		return etcdHealth(ctx, client, url)
	})
}

func etcdHealth(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health: %s: %s", resp.Status, body)
	}
	return nil
}
