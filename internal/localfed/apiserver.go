package localfed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Settings of every kube-apiserver.
const (
	serviceAccountIssuer = "https://kubernetes.default.svc"
	serviceClusterIPs    = "10.0.0.0/24"
)

// leanTrims are the trims of a lean member's kube-apiserver (WithLeanMembers),
// each of which can be measured on its own.
type leanTrims struct {
	// apis: serve no API group in leanDisabledAPIs.
	apis bool
	// oneProc: GOMAXPROCS=1, unless the environment sets GOMAXPROCS.
	oneProc bool
}

// leanDisabledAPIs are the API versions a lean member does not serve: none
// of them is needed by Fedwarden's join, probes and propagation of core and
// apps objects, nor by kube-controller-manager's controllers of the bed, nor
// by the kube-apiserver itself. The others stay on because the
// kube-apiserver's own informers, admission plugins or post-start hooks use
// them (the Node authorizer watches storage, certificates, resource and
// discovery objects; the Service IP allocator networking's; the Priority
// plugin PriorityClasses; the admission policy plugins admissionregistration's;
// priority and fairness flowcontrol's): switched off, it logs list failures
// forever or does not start.
var leanDisabledAPIs = []string{
	"batch/v1",
	"autoscaling/v1",
	"autoscaling/v2",
	"policy/v1",
	"storagemigration.k8s.io/v1",
	"events.k8s.io/v1",
}

// args are the flags a lean member's kube-apiserver adds.
func (t leanTrims) args() []string {
	if !t.apis {
		return nil
	}
	off := make([]string, len(leanDisabledAPIs))
	for i, gv := range leanDisabledAPIs {
		off[i] = gv + "=false"
	}
	return []string{"--runtime-config=" + strings.Join(off, ",")}
}

// environ is the environment of a lean member's kube-apiserver, nil for
// the inherited one. One core at a time costs a single kube-apiserver
// nothing it would notice in a bed of many (they share 2 cores anyway), and
// saves the Go scheduler's and garbage collector's work on a second one.
func (t leanTrims) environ() []string {
	if !t.oneProc || os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	return append(os.Environ(), "GOMAXPROCS=1")
}

// lean returns the trims of the cluster's kube-apiserver: none for the host.
func (c *Cluster) lean() leanTrims {
	if c.Name == HostName {
		return leanTrims{}
	}
	return c.env.lean
}

// apiserverArgs are the flags of the cluster's kube-apiserver.
func (c *Cluster) apiserverArgs() []string {
	file := func(name string) string { return filepath.Join(c.dir, name) }
	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.port),
		"--cert-dir=" + c.dir,
		"--tls-cert-file=" + file(servingCrtFile),
		"--tls-private-key-file=" + file(servingKeyFile),
		"--client-ca-file=" + file(clientCAFile),
		"--authorization-mode=Node,RBAC",
		"--etcd-servers=" + c.env.etcdURL,
		"--etcd-prefix=/" + c.Name,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + file(saPubFile),
		"--service-account-signing-key-file=" + file(saKeyFile),
		"--service-cluster-ip-range=" + serviceClusterIPs,
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		// On SIGTERM, close the clients' watches within a second or two.
		// Without it the server holds them, and so its stop, until its
		// HTTP shutdown timeout (60 s, --request-timeout): every Stop and
		// Restart of a cluster in a test took a minute.
		"--shutdown-watch-termination-grace-period=2s",
	}
	return append(args, c.lean().args()...)
}

// launch starts the kube-apiserver on the cluster's port and waits until it
// is ready; on failure, nothing is left running.
func (c *Cluster) launch(ctx context.Context) error {
	log, err := c.env.logs.open(c.Name, filepath.Join(c.dir, "apiserver.log"))
	if err != nil {
		return err
	}
	p, err := startProcessEnv("kube-apiserver "+c.Name, c.env.bins.apiserver, c.apiserverArgs(), c.lean().environ(), log)
	if err != nil {
		return err
	}
	c.proc.Store(p)
	if err := waitReady(ctx, c.Config, p, c.env.startTimeout); err != nil {
		return errors.Join(err, p.kill())
	}
	return nil
}

// waitReady polls the apiserver's /readyz with cfg until it answers 200.
func waitReady(ctx context.Context, cfg *rest.Config, p *process, timeout time.Duration) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	return p.waitUntil(ctx, timeout, 100*time.Millisecond, "is not ready", func(ctx context.Context) error {
		return readyz(ctx, client)
	})
}

func readyz(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}
