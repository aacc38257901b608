package localfed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// maxSocketPath is the longest path a unix socket may have on Linux.
const maxSocketPath = 107

// etcdServer is the etcd shared by every cluster of a federation.
type etcdServer struct {
	proc *process
	url  string
}

// startEtcd starts etcd with its data under dir and waits until it is
// healthy. etcd listens on unix sockets in dir, not on TCP: only the owner of
// the directory can reach it (the data of every cluster, Secrets included,
// is in it), and no other program can take its address between the choice
// and the bind.
func startEtcd(ctx context.Context, e *env, dir string) (*etcdServer, error) {
	clientSock, peerSock := filepath.Join(dir, "client.sock"), filepath.Join(dir, "peer.sock")
	if len(clientSock) > maxSocketPath {
		return nil, fmt.Errorf("etcd socket path %s is longer than %d bytes: use a shorter data directory", clientSock, maxSocketPath)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd's directory: %w", err)
	}
	log, err := e.logs.open("etcd", filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	clientURL := "unix://" + clientSock
	p, err := startProcess("etcd", e.bins.etcd, etcdArgs(filepath.Join(dir, "data"), clientURL, "unix://"+peerSock), log)
	if err != nil {
		return nil, err
	}
	if err := waitEtcdHealthy(ctx, clientSock, p, e.startTimeout); err != nil {
		return nil, errors.Join(err, p.kill())
	}
	return &etcdServer{proc: p, url: clientURL}, nil
}

func etcdArgs(dataDir, clientURL, peerURL string) []string {
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

// waitEtcdHealthy polls etcd's /health, through its unix socket, until it
// reports healthy.
func waitEtcdHealthy(ctx context.Context, socket string, p *process, timeout time.Duration) error {
	var dialer net.Dialer
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", socket)
		}},
	}
	defer client.CloseIdleConnections()
	return p.waitUntil(ctx, timeout, 50*time.Millisecond, "is not healthy", func(ctx context.Context) error {
		return etcdHealth(ctx, client)
	})
}

func etcdHealth(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://etcd/health", nil)
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
