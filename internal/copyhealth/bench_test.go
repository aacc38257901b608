package copyhealth

import "testing"

// BenchmarkEvaluateDeployment evaluates a Deployment whose rollout is
// complete, the longest path through the built-in rules (every rule is
// tried, the last one holds and its message is built), and one mid-rollout
// (the fifth rule holds). On the development machine (2 cores shared with
// other work, go1.26.8, linux/amd64; -benchtime 20000x, runs vary by
// about a third):
//
//	BenchmarkEvaluateDeployment/deployment-complete-2   20000   21566 ns/op   8963 B/op   194 allocs/op
//	BenchmarkEvaluateDeployment/deployment-rolling-2    20000   16415 ns/op   6561 B/op   152 allocs/op
func BenchmarkEvaluateDeployment(b *testing.B) {
	e := newEvaluator(b)
	for _, name := range []string{"deployment-complete", "deployment-rolling"} {
		obj := load(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Evaluate(obj)
			}
		})
	}
}
