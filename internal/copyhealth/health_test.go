package copyhealth

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

const (
	healthy     = corev1beta1.HealthHealthy
	progressing = corev1beta1.HealthProgressing
	degraded    = corev1beta1.HealthDegraded
	unknown     = corev1beta1.HealthUnknown
)

var certificate = schema.GroupKind{Group: "cert-manager.io", Kind: "Certificate"}

// certificateRules are spec.healthRules a user would write for
// cert-manager's Certificate, a kind with no built-in rules.
var certificateRules = []corev1beta1.HealthRule{
	{Health: progressing, Reason: "GenerationNotObserved",
		When: `object.?status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.?observedGeneration.orValue(0) < object.metadata.generation)`},
	{Health: degraded, Reason: "IssuingFailed",
		When:    `object.?status.?conditions.orValue([]).exists(c, c.type == 'Issuing' && c.status == 'False' && c.reason == 'Failed')`,
		Message: `object.status.conditions.filter(c, c.type == 'Issuing')[0].message`},
	{Health: healthy, Reason: "Ready",
		When:    `object.?status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')`,
		Message: `'valid until ' + object.status.notAfter`},
	{Health: progressing, Reason: "Issuing",
		When: `object.?status.?conditions.orValue([]).exists(c, c.type == 'Issuing' && c.status == 'True')`},
}

// load reads testdata/name.yaml as an informer holds it (numbers as int64).
func load(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// edit returns a copy of testdata/name.yaml changed by set.
func edit(name string, set func(u *unstructured.Unstructured)) func(testing.TB) *unstructured.Unstructured {
	return func(t testing.TB) *unstructured.Unstructured {
		u := load(t, name).DeepCopy()
		set(u)
		return u
	}
}

func file(name string) func(testing.TB) *unstructured.Unstructured {
	return func(t testing.TB) *unstructured.Unstructured { return load(t, name) }
}

func setField(u *unstructured.Unstructured, value any, path ...string) {
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		panic(err)
	}
}

func newEvaluator(t testing.TB, opts ...Option) *Evaluator {
	t.Helper()
	e, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEvaluateBuiltin(t *testing.T) {
	t.Parallel()
	e := newEvaluator(t)
	for _, tc := range []struct {
		name string
		obj  func(testing.TB) *unstructured.Unstructured
		want Result
	}{
		{"deployment rolling", file("deployment-rolling"),
			Result{progressing, "ReplicasNotUpdated", "rolling out: 2 of 3 replicas updated"}},
		{"deployment old replicas terminating", edit("deployment-rolling", func(u *unstructured.Unstructured) {
			setField(u, int64(3), "status", "updatedReplicas")
		}), Result{progressing, "OldReplicasTerminating", "rolling out: 1 old replicas pending termination"}},
		{"deployment updated not available", edit("deployment-complete", func(u *unstructured.Unstructured) {
			setField(u, int64(2), "status", "availableReplicas")
		}), Result{progressing, "ReplicasNotAvailable", "rolling out: 2 of 3 updated replicas available"}},
		{"deployment complete", file("deployment-complete"),
			Result{healthy, "ReplicasAvailable", "3 of 3 replicas updated and available"}},
		{"deployment new generation not observed", edit("deployment-complete", func(u *unstructured.Unstructured) {
			u.SetGeneration(5)
		}), Result{progressing, "GenerationNotObserved", "the controller has not observed generation 5 yet (it has seen 4)"}},
		{"deployment just created", edit("deployment-complete", func(u *unstructured.Unstructured) {
			u.SetGeneration(1)
			delete(u.Object, "status")
		}), Result{progressing, "GenerationNotObserved", "the controller has not observed generation 1 yet (it has seen 0)"}},
		{"deployment scaled to zero", edit("deployment-complete", func(u *unstructured.Unstructured) {
			setField(u, int64(0), "spec", "replicas")
			u.Object["status"] = map[string]any{"observedGeneration": int64(4)}
		}), Result{healthy, "ReplicasAvailable", "0 of 0 replicas updated and available"}},
		{"deployment without spec.replicas defaults to 1", edit("deployment-complete", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "replicas")
		}), Result{progressing, "ReplicasTerminating", "2 replicas pending termination"}},
		{"deployment paused", edit("deployment-rolling", func(u *unstructured.Unstructured) {
			setField(u, true, "spec", "paused")
		}), Result{progressing, "DeploymentPaused", "the Deployment is paused: its rollout waits for kubectl rollout resume"}},
		{"deployment progress deadline exceeded (image cannot be pulled)", file("deployment-progress-deadline"),
			Result{degraded, "ProgressDeadlineExceeded", `progress deadline exceeded: ReplicaSet "web-7c9d8f6b4" has timed out progressing.`}},
		{"deployment progress deadline of an older generation", edit("deployment-progress-deadline", func(u *unstructured.Unstructured) {
			u.SetGeneration(6)
		}), Result{progressing, "GenerationNotObserved", "the controller has not observed generation 6 yet (it has seen 5)"}},
		{"deployment replica failure", file("deployment-replica-failure"),
			Result{degraded, "ReplicaFailure", `FailedCreate: pods "web-5d4f8b7c6-x2x9q" is forbidden: exceeded quota: compute, requested: requests.cpu=4, used: requests.cpu=0, limited: requests.cpu=2`}},
		{"deployment being deleted", edit("deployment-complete", func(u *unstructured.Unstructured) {
			setField(u, "2026-12-01T10:00:00Z", "metadata", "deletionTimestamp")
		}), Result{progressing, corev1beta1.HealthReasonTerminating, "the object is being deleted since 2026-12-01T10:00:00Z"}},

		{"statefulset rolling", file("statefulset-rolling"),
			Result{progressing, "RevisionNotUpdated", "rolling out revision db-7f5b6c4d9: 1 of 3 replicas updated"}},
		{"statefulset not ready", edit("statefulset-ready", func(u *unstructured.Unstructured) {
			setField(u, int64(1), "status", "readyReplicas")
		}), Result{progressing, "ReplicasNotReady", "1 of 3 replicas ready"}},
		{"statefulset scaled down", edit("statefulset-ready", func(u *unstructured.Unstructured) {
			setField(u, int64(2), "spec", "replicas")
		}), Result{progressing, "ReplicasTerminating", "1 replicas pending termination"}},
		{"statefulset partitioned, in progress", edit("statefulset-rolling", func(u *unstructured.Unstructured) {
			setField(u, int64(1), "spec", "updateStrategy", "rollingUpdate", "partition")
		}), Result{progressing, "PartitionRollingUpdate", "rolling out above partition 1: 1 of 2 replicas updated"}},
		{"statefulset partitioned, done", edit("statefulset-rolling", func(u *unstructured.Unstructured) {
			setField(u, int64(2), "spec", "updateStrategy", "rollingUpdate", "partition")
		}), Result{healthy, "PartitionRolledOut", "rolled out above partition 2: 1 replicas updated"}},
		{"statefulset OnDelete", edit("statefulset-rolling", func(u *unstructured.Unstructured) {
			u.Object["spec"].(map[string]any)["updateStrategy"] = map[string]any{"type": "OnDelete"}
		}), Result{healthy, "OnDeleteStrategy", "the StatefulSet updates a Pod only when it is deleted (updateStrategy OnDelete)"}},
		{"statefulset ready", file("statefulset-ready"),
			Result{healthy, "ReplicasReady", "3 of 3 replicas ready at revision db-7f5b6c4d9"}},

		{"daemonset rolling", file("daemonset-rolling"),
			Result{progressing, "PodsNotUpdated", "rolling out: 2 of 4 Pods updated"}},
		{"daemonset updated, not available", edit("daemonset-rolling", func(u *unstructured.Unstructured) {
			setField(u, int64(4), "status", "updatedNumberScheduled")
		}), Result{progressing, "PodsNotAvailable", "3 of 4 Pods available"}},
		{"daemonset without status yet", edit("daemonset-ready", func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"observedGeneration": int64(2)}
		}), Result{progressing, "NotScheduled", "the DaemonSet controller has not counted the nodes to run on yet"}},
		{"daemonset ready", file("daemonset-ready"),
			Result{healthy, "PodsAvailable", "4 of 4 Pods updated and available"}},
		{"daemonset on no node", edit("daemonset-ready", func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"observedGeneration": int64(2), "desiredNumberScheduled": int64(0),
				"currentNumberScheduled": int64(0), "numberMisscheduled": int64(0), "numberReady": int64(0)}
		}), Result{healthy, "PodsAvailable", "0 of 0 Pods updated and available"}},

		{"replicaset available", func(t testing.TB) *unstructured.Unstructured {
			return replicaSet(3, map[string]any{"observedGeneration": int64(1), "replicas": int64(3), "readyReplicas": int64(3), "availableReplicas": int64(3), "fullyLabeledReplicas": int64(3)})
		}, Result{healthy, "ReplicasAvailable", "3 of 3 replicas available"}},
		{"replicaset not available", func(t testing.TB) *unstructured.Unstructured {
			return replicaSet(3, map[string]any{"observedGeneration": int64(1), "replicas": int64(3), "readyReplicas": int64(1), "availableReplicas": int64(1)})
		}, Result{progressing, "ReplicasNotAvailable", "1 of 3 replicas available"}},
		{"replicaset failure", func(t testing.TB) *unstructured.Unstructured {
			return replicaSet(3, map[string]any{"observedGeneration": int64(1), "replicas": int64(0), "conditions": []any{
				map[string]any{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": `pods "web-x" is forbidden: exceeded quota`}}})
		}, Result{degraded, "ReplicaFailure", `FailedCreate: pods "web-x" is forbidden: exceeded quota`}},

		{"job running", file("job-running"), Result{progressing, "JobRunning", "running: 1 active, 0 succeeded, 0 failed"}},
		{"job complete", file("job-complete"), Result{healthy, "JobComplete", "completed: 1 Pods succeeded"}},
		{"job failed", file("job-failed"), Result{degraded, "JobFailed", "BackoffLimitExceeded: Job has reached the specified backoff limit"}},
		{"job failure target only", edit("job-failed", func(u *unstructured.Unstructured) {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			setField(u, conds[:1], "status", "conditions")
		}), Result{degraded, "JobFailed", "BackoffLimitExceeded: Job has reached the specified backoff limit"}},
		{"job suspended", edit("job-running", func(u *unstructured.Unstructured) {
			setField(u, true, "spec", "suspend")
		}), Result{progressing, "JobSuspended", "the Job is suspended"}},

		{"service load balancer pending", file("service-lb-pending"), Result{progressing, "LoadBalancerPending", "waiting for the load balancer"}},
		{"service load balancer assigned", file("service-lb-assigned"),
			Result{healthy, "LoadBalancerReady", "load balancer at 203.0.113.10, web.lb.example.com"}},
		{"service ClusterIP", file("service-clusterip"), Result{healthy, "ServiceCreated", "type ClusterIP"}},

		{"pvc pending", file("pvc-pending"), Result{progressing, "ClaimPending", "waiting for a volume (a claim whose storage class binds on first use waits for a Pod)"}},
		{"pvc bound", file("pvc-bound"), Result{healthy, "ClaimBound", "bound to volume pvc-8d2c4f0e-1b7a-4c39-9f52-2e6b1d3a7c90"}},
		{"pvc lost", file("pvc-lost"), Result{degraded, "ClaimLost", "the claim lost its volume pvc-8d2c4f0e-1b7a-4c39-9f52-2e6b1d3a7c90"}},
		{"pvc of an unknown phase", edit("pvc-bound", func(u *unstructured.Unstructured) {
			setField(u, "Resizing", "status", "phase")
		}), Result{unknown, corev1beta1.HealthReasonNoRuleMatched, "no health rule of the kind holds for this object"}},

		{"a kind without rules", func(testing.TB) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "web", "namespace": "demo"}, "data": map[string]any{"a": "b"}}}
		}, Result{healthy, corev1beta1.HealthReasonNoRules, "the kind has no health rules: an object that exists is Healthy"}},
		{"a kind without rules, being deleted", func(testing.TB) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "web", "deletionTimestamp": "2026-12-01T10:00:00Z", "finalizers": []any{"example.com/keep"}}}}
		}, Result{progressing, corev1beta1.HealthReasonTerminating, "the object is being deleted since 2026-12-01T10:00:00Z"}},
		{"a deployment whose status has the wrong shape", edit("deployment-complete", func(u *unstructured.Unstructured) {
			setField(u, "three", "status", "updatedReplicas")
		}), Result{unknown, corev1beta1.HealthReasonRuleFailed, "built-in rule ReplicasNotUpdated of Deployment.apps.when: no such overload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := e.Evaluate(tc.obj(t)); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func replicaSet(replicas int64, status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "ReplicaSet",
		"metadata": map[string]any{"name": "web-6b8f7d9c5d", "namespace": "demo", "generation": int64(1)},
		"spec":     map[string]any{"replicas": replicas, "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}},
		"status":   status,
	}}
}

func TestEvaluateUserRules(t *testing.T) {
	t.Parallel()
	e := newEvaluator(t)
	if err := e.SetRules(certificate, certificateRules); err != nil {
		t.Fatal(err)
	}
	// A Deployment rule that comes before the built-in ones.
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	if err := e.SetRules(deployment, []corev1beta1.HealthRule{{
		Health: degraded, Reason: "MarkedBroken",
		When:    `object.metadata.?annotations[?'example.com/broken'].orValue('') == 'true'`,
		Message: `'marked broken by ' + object.metadata.annotations['example.com/owner']`,
	}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		obj  func(testing.TB) *unstructured.Unstructured
		want Result
	}{
		{"certificate ready", file("certificate-ready"), Result{healthy, "Ready", "valid until 2027-03-01T09:00:00Z"}},
		{"certificate failed", file("certificate-failed"),
			Result{degraded, "IssuingFailed", "The certificate request has failed to complete and will be retried: the ACME order was rejected"}},
		{"certificate issuing", file("certificate-issuing"), Result{progressing, "Issuing", ""}},
		{"certificate of a newer generation", edit("certificate-ready", func(u *unstructured.Unstructured) {
			u.SetGeneration(3)
		}), Result{progressing, "GenerationNotObserved", ""}},
		{"certificate no rule matches", edit("certificate-ready", func(u *unstructured.Unstructured) {
			delete(u.Object, "status")
		}), Result{unknown, corev1beta1.HealthReasonNoRuleMatched, "no health rule of the kind holds for this object"}},
		{"certificate whose condition misses a field a rule reads", edit("certificate-ready", func(u *unstructured.Unstructured) {
			setField(u, []any{map[string]any{"status": "True"}}, "status", "conditions")
		}), Result{unknown, corev1beta1.HealthReasonRuleFailed, "healthRules[0].when: no such key: type"}},
		{"deployment marked broken: the user rule comes first", edit("deployment-complete", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"example.com/broken": "true", "example.com/owner": "team-a"})
		}), Result{degraded, "MarkedBroken", "marked broken by team-a"}},
		{"deployment marked broken, message fails", edit("deployment-complete", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"example.com/broken": "true"})
		}), Result{degraded, "MarkedBroken", "healthRules[0].message: no such key: example.com/owner"}},
		{"deployment not marked: the built-in rules decide", file("deployment-rolling"),
			Result{progressing, "ReplicasNotUpdated", "rolling out: 2 of 3 replicas updated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := e.Evaluate(tc.obj(t)); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rules []corev1beta1.HealthRule
		want  []string // each in the error
	}{
		{"undeclared variable", []corev1beta1.HealthRule{{Health: healthy, When: "self.status.ready"}},
			[]string{"healthRules[0].when: ERROR: <input>:1:1: undeclared reference to 'self'"}},
		{"syntax error", []corev1beta1.HealthRule{{Health: healthy, When: "true"}, {Health: degraded, When: "object.status.phase =="}},
			[]string{"healthRules[1].when: ERROR: <input>:1:23: Syntax error"}},
		{"when is not a bool", []corev1beta1.HealthRule{{Health: healthy, When: "size(object.metadata.name) + 1"}},
			[]string{"healthRules[0].when: gives int, not bool"}},
		{"when is optional", []corev1beta1.HealthRule{{Health: healthy, When: "object.?spec.?paused"}},
			[]string{"healthRules[0].when: gives optional_type(dyn), not bool"}},
		{"message is not a string", []corev1beta1.HealthRule{{Health: healthy, When: "true", Message: "1 + 2"}},
			[]string{"healthRules[0].message: gives int, not string"}},
		{"health outside the enum", []corev1beta1.HealthRule{{Health: unknown, When: "true"}},
			[]string{`healthRules[0].health: "Unknown" is not Healthy, Progressing or Degraded`}},
		{"empty when", []corev1beta1.HealthRule{{Health: healthy}},
			[]string{"healthRules[0].when: empty expression"}},
		{"too long", []corev1beta1.HealthRule{{Health: healthy, When: "true" + strings.Repeat(" && true", 200)}},
			[]string{"healthRules[0].when: 1604 bytes long, more than the 1024 allowed"}},
		{"every bad rule is named", []corev1beta1.HealthRule{
			{Health: healthy, When: "object.spec.x == 1"}, {Health: healthy, When: "nope"}, {Health: healthy, When: "true", Message: "object.)"}},
			[]string{"healthRules[1].when: ERROR", "undeclared reference to 'nope'", "healthRules[2].message: ERROR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tc.rules)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
	if _, err := Compile(make([]corev1beta1.HealthRule, 33)); err == nil || err.Error() != "healthRules: 33 rules, more than the 32 allowed" {
		t.Errorf("33 rules: %v", err)
	}
}

func TestSetRules(t *testing.T) {
	t.Parallel()
	e := newEvaluator(t)
	ready := load(t, "certificate-ready")
	eval := func() Result { return e.Evaluate(ready) }

	if got := eval(); got.Reason != corev1beta1.HealthReasonNoRules {
		t.Fatalf("before rules: %+v", got)
	}
	bad := append([]corev1beta1.HealthRule{{Health: degraded, When: "object.status.conditions.exists(c, c.typ = 'Ready')"}}, certificateRules...)
	err := e.SetRules(certificate, bad)
	if err == nil || !strings.HasPrefix(err.Error(), "healthRules[0].when: ERROR: <input>:1:42: Syntax error") {
		t.Fatalf("bad rules: %v", err)
	}
	got := eval()
	if got.Health != unknown || got.Reason != corev1beta1.HealthReasonInvalidRules ||
		!strings.HasPrefix(got.Message, "the kind's healthRules do not compile: healthRules[0].when: ERROR") {
		t.Errorf("with bad rules: %+v", got)
	}
	if err2 := e.SetRules(certificate, bad); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("the same bad rules again: %v", err2)
	}
	if err := e.SetRules(certificate, certificateRules); err != nil {
		t.Fatal(err)
	}
	if got := eval(); got.Health != healthy || got.Reason != "Ready" {
		t.Errorf("with fixed rules: %+v", got)
	}
	if err := e.SetRules(certificate, nil); err != nil {
		t.Fatal(err)
	}
	if got := eval(); got.Reason != corev1beta1.HealthReasonNoRules {
		t.Errorf("rules removed: %+v", got)
	}
	// A rule that may only give a bool when it runs.
	if err := e.SetRules(certificate, []corev1beta1.HealthRule{{Health: healthy, When: "object.status.revision"}}); err != nil {
		t.Fatal(err)
	}
	want := Result{unknown, corev1beta1.HealthReasonRuleFailed, "healthRules[0].when: gave int, not bool"}
	if got := eval(); got != want {
		t.Errorf("a when that gives an int: got %+v, want %+v", got, want)
	}
}

// TestCostLimit: a rule that would take a million steps is stopped at the
// cost limit, and its object is Unknown, in well under a second.
func TestCostLimit(t *testing.T) {
	t.Parallel()
	widget := func(n int) map[string]any {
		xs := make([]any, n)
		for i := range xs {
			xs[i] = int64(i)
		}
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"xs": xs}}
	}
	rules := []corev1beta1.HealthRule{{Health: healthy,
		When: `object.spec.xs.all(a, object.spec.xs.all(b, object.spec.xs.all(c, a + b + c >= 0)))`}}
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"default limit", nil}, {"a lower limit", []Option{WithCostLimit(1000)}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := Compile(rules, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			want := Result{unknown, corev1beta1.HealthReasonRuleFailed, "healthRules[0].when: operation cancelled: actual cost limit exceeded"}
			if got := r.Evaluate(widget(100)); got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
	// The same rule over a short list stays under the limit.
	r, err := Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Evaluate(widget(5)); got.Health != healthy {
		t.Errorf("short list: %+v", got)
	}
}

func TestRulesWithoutEvaluator(t *testing.T) {
	t.Parallel()
	var none *Rules
	if got := none.Evaluate(map[string]any{}); got != noRules {
		t.Errorf("nil rules: %+v", got)
	}
	r, err := Compile(certificateRules)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Evaluate(load(t, "certificate-failed").Object); got.Health != degraded {
		t.Errorf("certificate-failed: %+v", got)
	}
	if got := r.Evaluate(map[string]any{"metadata": map[string]any{"generation": int64(1)}}); got != noRuleMatched {
		t.Errorf("empty object: %+v", got)
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 1000) // 2000 bytes
	got := truncate(long)
	if len(got) > maxMessageLength || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("truncate: %d bytes, %q…", len(got), got[len(got)-10:])
	}
	if got := truncate("short"); got != "short" {
		t.Errorf("short: %q", got)
	}
}

// TestBuiltinRulesDocumented: docs/health.md's table names every built-in
// reason of every kind.
func TestBuiltinRulesDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "health.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, gk := range BuiltinKinds() {
		if !strings.Contains(doc, "| "+gk.Kind+" |") {
			t.Errorf("docs/health.md has no row for %s", gk.Kind)
		}
		for _, r := range BuiltinRules(gk) {
			if !strings.Contains(doc, "`"+r.Reason+"`") {
				t.Errorf("docs/health.md does not name %s's reason %s", gk.Kind, r.Reason)
			}
		}
	}
}

// TestLibraries: the CEL libraries docs/health.md promises are there.
func TestLibraries(t *testing.T) {
	t.Parallel()
	obj := load(t, "deployment-complete").Object
	for _, expr := range []string{
		`'a,b'.split(',').size() == 2 && ['a', 'b'].join('-') == 'a-b' && 'AB'.lowerAscii() == 'ab'`,
		`'nginx:1.29'.matches('^nginx:') && object.spec.template.spec.containers[0].image.find('[0-9.]+$') == '1.29'`,
		`quantity('1Gi').isGreaterThan(quantity('512Mi'))`,
		`url('https://example.com/x').getHost() == 'example.com'`,
		`ip('10.0.0.1').family() == 4 && cidr('10.0.0.0/8').containsIP(ip('10.0.0.1'))`,
		`semver('1.29.0').isGreaterThan(semver('1.28.3'))`,
		`'%s of %d'.format(['web', 3]) == 'web of 3'`,
		`sets.contains([1, 2, 3], [2])`,
		`object.status.conditions.all(i, c, i >= 0 && c.type != '')`,
		`object.spec.replicas < 3.5 && object.?spec.?paused.orValue(false) == false`,
		`object.metadata.?labels[?'app'].orValue('') == 'web'`,
	} {
		r, err := Compile([]corev1beta1.HealthRule{{Health: healthy, When: expr}})
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := r.Evaluate(obj); got.Health != healthy {
			t.Errorf("%s: %+v", expr, got)
		}
	}
}

func TestHasSpecRules(t *testing.T) {
	t.Parallel()
	e := newEvaluator(t)
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	if e.HasSpecRules(certificate) || e.HasSpecRules(deployment) {
		t.Fatal("spec rules before any were set (built-in rules are not spec rules)")
	}
	bad := []corev1beta1.HealthRule{{Health: degraded, When: "object.status.conditions.exists(c, c.typ = 'Ready')"}}
	if err := e.SetRules(certificate, bad); err == nil {
		t.Fatal("bad rules compiled")
	}
	if !e.HasSpecRules(certificate) {
		t.Error("rules that do not compile: no spec rules")
	}
	if err := e.SetRules(certificate, certificateRules); err != nil || !e.HasSpecRules(certificate) {
		t.Errorf("rules set: %v, HasSpecRules %t", err, e.HasSpecRules(certificate))
	}
	if err := e.SetRules(certificate, nil); err != nil || e.HasSpecRules(certificate) {
		t.Errorf("rules removed: %v, HasSpecRules %t", err, e.HasSpecRules(certificate))
	}
}

func TestSpecFields(t *testing.T) {
	t.Parallel()
	want := map[schema.GroupKind][]string{
		{Group: "apps", Kind: "Deployment"}:  {"paused", "replicas"},
		{Group: "apps", Kind: "StatefulSet"}: {"replicas", "updateStrategy"},
		{Group: "apps", Kind: "DaemonSet"}:   {"updateStrategy"},
		{Group: "apps", Kind: "ReplicaSet"}:  {"replicas"},
		{Group: "batch", Kind: "Job"}:        {"suspend"},
		{Kind: "Service"}:                    {"type"},
		{Kind: "PersistentVolumeClaim"}:      {"volumeName"},
		{Kind: "ConfigMap"}:                  nil,
	}
	for gk, fields := range want {
		if got := SpecFields(gk); !slices.Equal(got, fields) {
			t.Errorf("SpecFields(%s) = %v, want %v", gk, got, fields)
		}
	}
	for _, gk := range BuiltinKinds() {
		for _, r := range BuiltinRules(gk) {
			// A rule reading spec otherwise than SpecFields finds would read
			// a field a cached copy may not hold.
			for _, expr := range []string{r.When, r.Message} {
				if n, found := strings.Count(expr, "spec"), len(specField.FindAllString(expr, -1)); n != found {
					t.Errorf("%s rule %s reads spec %d times, SpecFields finds %d: %s", gk, r.Reason, n, found, expr)
				}
			}
		}
	}
}
