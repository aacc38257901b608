// Package localfed runs a throw-away Fedwarden federation on the local
// machine: one etcd, a host kube-apiserver and any number of member
// kube-apiservers, each with its kube-controller-manager, all real
// processes, with Fedwarden's CRDs and admission policies installed into the
// host (and the policies enforced before Start returns). The admin user of
// the host, whose credentials run Fedwarden's controller-manager in every
// bed and in `fedwarden up`, is its identity: the subject of the
// ClusterRoleBinding fedwarden-cpv-spec-writer, the only one the policy
// fedwarden-cpv-spec lets write a ClusterPropagatedVersion's spec (a test
// that runs the controller-manager as another user adds that user there).
// The kube-apiservers listen on 127.0.0.1; etcd listens only on unix
// sockets in the federation's private directory.
//
// It is the test bed of every integration and end-to-end test.
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
// named after the cluster, and apiserver.log and controller-manager.log
// (unless WithLogOutput is used).
//
// # Trade-offs
//
//   - One etcd serves every cluster; each kube-apiserver stores its objects
//     under its own --etcd-prefix (/host, /member-1, ...). This saves one etcd
//     per cluster (memory and start time) but a member cannot lose its etcd
//     on its own: Stop, Kill and Restart act on the kube-apiserver only.
//   - WithLeanMembers trims the members' kube-apiservers for beds of many
//     members (20 and more on 2 cores): fewer API groups served, and one
//     core each. It saves about a quarter of a member's CPU to start and
//     idle, and a tenth of its memory (bench/RESULTS.md), and leaves
//     out Jobs, CronJobs, HorizontalPodAutoscalers, PodDisruptionBudgets
//     and events.k8s.io, so it is for beds that place none of them.
//   - Each cluster runs a kube-controller-manager with DefaultControllers
//     (namespace, garbage collector, ServiceAccount and token, root CA
//     publisher, Deployment, ReplicaSet, ResourceQuota), so namespaces finish
//     deleting, owner references are collected, long-lived token Secrets are
//     filled in and Deployments get status. There is no scheduler and no
//     kubelet: Pods are stored but never run. WithControllers changes the
//     list; with none, no kube-controller-manager runs.
//   - kube-apiserver ports lie below the kernel's ephemeral range (on
//     Linux), which the kernel gives programs asking for any port and
//     outgoing connections, and each is reserved by a lock file that other
//     programs using localfed respect; so a restarted kube-apiserver finds
//     its port again while other beds and servers start. The port is still
//     released before the process binds it: when a program binding that
//     very port takes it first, Start retries with fresh ports, and Restart
//     retries the same port for a while. Elsewhere ports are asked from the
//     kernel. etcd avoids the race, and other local users, by listening on
//     unix sockets in a directory only its owner can enter.
//   - Every process runs in its own process group, so that a Ctrl-C in a
//     terminal reaches only the program that started them, and, on Linux,
//     is killed by the kernel when that program dies, so that a crashed
//     test leaves nothing behind. Stop ends them in order: controller-
//     managers and kube-apiservers, then etcd.
//   - etcd runs with --unsafe-no-fsync: much faster, but a machine crash may
//     lose the last writes. Nothing here survives Stop anyway.
//   - Certificates are ECDSA P-256, generated for each Start; they are valid
//     for a year and never rotated.
//   - Unix only: processes are managed with Unix signals.
package localfed
