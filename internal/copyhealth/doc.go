// Package copyhealth computes the health of a member cluster's copy of a
// federated resource — Healthy, Progressing, Degraded or Unknown, with a
// reason and a message — by rules written in CEL over the member object.
//
// Each kind has an ordered list of rules (api/core/v1beta1.HealthRule):
// the first whose `when` holds gives the health. A FederatedTypeConfig's
// spec.healthRules are tried before the built-in rules of its kind
// (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, Service,
// PersistentVolumeClaim); an object that no rule matches is Unknown, and
// an object of a kind with no rules at all is Healthy once it exists.
// Rules are compiled once, in Kubernetes' CEL environment for CRD
// validation rules, and each expression stops at a cost limit; evaluating
// a Deployment takes about 20 µs (BenchmarkEvaluateDeployment). See
// docs/health.md.
package copyhealth
