// Package localfed runs a throw-away Fedwarden federation on the local
// machine: one etcd, a host kube-apiserver and any number of member
// kube-apiservers, all real processes listening on 127.0.0.1, with
// Fedwarden's CRDs installed into the host.
//
// It is the test bed of every integration and end-to-end test, and the engine
// behind `fedwarden up`.
//
// # Usage
//
//	fed, err := localfed.Start(ctx, localfed.WithMembers(2))
//	if err != nil {
//		t.Fatal(err)
//	}
//	t.Cleanup(func() { _ = fed.Stop() })
//
//	host, err := fed.Host.Client()             // admin (system:masters) client
//	member := fed.Member("member-1")           // Endpoint, CAData, Config, Kubeconfig
//	limited, err := member.ConfigForUser("bob") // a user without any RBAC binding
//	err = member.Kill()                         // SIGKILL, as in a crash
//	err = member.Restart(ctx)                   // same port, certificates and data
//
// The binaries are taken from WithBinDir, else from $FEDWARDEN_BIN_DIR, else
// from bin/ at the root of the Fedwarden module (built by
// hack/tools/build.sh). Every cluster gets its own directory under
// Federation.Dir holding its certificates, a kubeconfig whose context is
// named after the cluster, and apiserver.log (unless WithLogOutput is used).
//
// # Trade-offs
//
//   - One etcd serves every cluster; each kube-apiserver stores its objects
//     under its own --etcd-prefix (/host, /member-1, ...). This saves one etcd
//     per cluster (memory and start time) but a member cannot lose its etcd
//     on its own: Kill and Restart act on the kube-apiserver only.
//   - There is no controller-manager, scheduler or kubelet. Objects are
//     stored and validated but nothing acts on them: a Deployment never gets
//     Pods, a namespace being deleted keeps its finalizer, and the default
//     ServiceAccount of a namespace is never created (so creating a Pod is
//     refused by the ServiceAccount admission plugin unless the test creates
//     the ServiceAccount itself).
//   - The kube-apiservers advertise 127.0.0.1, which they refuse to publish
//     as the endpoint of the kubernetes Service, so they run with
//     --endpoint-reconciler-type=none: that Service has no endpoints.
//   - Each kube-apiserver holds about 280 MiB resident (the host about 370
//     MiB, with the CRDs), etcd about 80 MiB: a host and three members need
//     some 1.3 GiB and take 8 to 10 s to start on two cores (BenchmarkStart).
//   - Ports are asked from the kernel and released before the process binds
//     them, so another program can take one in between; Start then retries
//     with fresh ports, and Restart retries the same port for a while.
//   - Every process runs in its own process group (a Ctrl-C in a terminal
//     reaches only the parent, which stops the apiservers before etcd) and,
//     on Linux, is killed by the kernel when the process that started it
//     dies, so a crashed test leaves nothing behind.
//   - etcd runs with --unsafe-no-fsync: much faster, but a machine crash may
//     lose the last writes. Nothing here survives Stop anyway.
//   - Certificates are ECDSA P-256, generated for each Start; they are valid
//     for a year and never rotated.
//   - Unix only: processes are managed with Unix signals.
package localfed
