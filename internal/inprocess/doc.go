// Package inprocess runs Fedwarden's host-side controllers in the test's own
// process, in a controller-runtime manager set up as `fedwarden
// controller-manager` sets up its own, against a localfed federation whose
// members are joined with the real `fedwarden join`: the test bed of the
// integration tests of the controllers.
//
// # Usage
//
//	var shared = inprocess.Shared{
//		Name:       "propagation",
//		Federation: []localfed.Option{localfed.WithMemberNames("member-1")},
//		Setup: func(ctx context.Context, b *inprocess.Bed) error {
//			if err := b.StartManager(addTheControllersUnderTest); err != nil {
//				return err
//			}
//			return b.Join()
//		},
//	}
//
//	func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }
//
//	func TestSomething(t *testing.T) {
//		b := shared.Bed(t) // started by the first test that asks
//		t.Parallel()
//		ns := b.Namespace(t, "something")
//		poll.Eventually(t, 30*time.Second, "the copy", func(ctx context.Context) (bool, string) { ... })
//	}
//
// # Trade-offs
//
//   - The controllers run in the test binary, so a test sees their data races
//     under -race and needs no fedwarden binary; test/fedtest runs the binary
//     instead, as a user does, for the end-to-end tests.
//   - The controllers' log, and klog's, go to a file (the process-wide
//     loggers are set). Members may be reached on loopback only: Stop fails
//     when the log shows a connection the egress guard refused, and keeps
//     the file when a test failed.
//   - The manager has no leader election, metrics or health endpoints, and
//     its members' health is probed every 2 s, quicker than the command's
//     default, so that a stopped member is seen within seconds.
package inprocess
