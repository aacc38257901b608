package copyhealth

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// Expressions that several built-in rules share. Fields that the API
// server leaves out when they are zero (most counts in status) are read
// with ?. and a default, as the controllers that write them mean them.
const (
	generationNotObserved        = `object.?status.?observedGeneration.orValue(0) < object.?metadata.?generation.orValue(0)`
	generationNotObservedMessage = `'the controller has not observed generation ' + string(object.metadata.generation) + ' yet (it has seen ' + string(object.?status.?observedGeneration.orValue(0)) + ')'`
	onDelete                     = `object.?spec.?updateStrategy.?type.orValue('') == 'OnDelete'`

	specReplicas      = `object.?spec.?replicas.orValue(1)`
	statusReplicas    = `object.?status.?replicas.orValue(0)`
	updatedReplicas   = `object.?status.?updatedReplicas.orValue(0)`
	readyReplicas     = `object.?status.?readyReplicas.orValue(0)`
	availableReplicas = `object.?status.?availableReplicas.orValue(0)`
	partition         = `object.?spec.?updateStrategy.?rollingUpdate.?partition.orValue(0)`

	desiredScheduled = `object.?status.?desiredNumberScheduled.orValue(0)`
	updatedScheduled = `object.?status.?updatedNumberScheduled.orValue(0)`
	numberAvailable  = `object.?status.?numberAvailable.orValue(0)`

	replicaFailure        = `object.?status.?conditions.orValue([]).exists(c, c.?type.orValue('') == 'ReplicaFailure' && c.?status.orValue('') == 'True')`
	replicaFailureMessage = `object.status.conditions.filter(c, c.?type.orValue('') == 'ReplicaFailure' && c.?status.orValue('') == 'True').map(c, c.?reason.orValue('') + ': ' + c.?message.orValue(''))[0]`

	lbIngress = `object.?status.?loadBalancer.?ingress.orValue([])`
	pvcPhase  = `object.?status.?phase.orValue('')`
)

// generationRule makes a kind Progressing while its controller has not
// acted on the latest spec: whatever its status says describes an older one.
var generationRule = corev1beta1.HealthRule{
	Health: corev1beta1.HealthProgressing, Reason: "GenerationNotObserved",
	When: generationNotObserved, Message: generationNotObservedMessage,
}

// builtinRules are the health rules of the workload kinds Kubernetes
// ships, after kstatus and Argo CD's built-in health checks. A Deployment
// cannot tell that its Pods fail to pull an image: only its Progressing
// condition with reason ProgressDeadlineExceeded, progressDeadlineSeconds
// (600 by default) after the rollout stopped progressing, makes it
// Degraded; until then it is Progressing.
var builtinRules = map[schema.GroupKind][]corev1beta1.HealthRule{
	{Group: "apps", Kind: "Deployment"}: {
		{Health: corev1beta1.HealthProgressing, Reason: "DeploymentPaused",
			When:    `object.?spec.?paused.orValue(false) == true`,
			Message: `'the Deployment is paused: its rollout waits for kubectl rollout resume'`},
		generationRule,
		{Health: corev1beta1.HealthDegraded, Reason: "ProgressDeadlineExceeded",
			When:    `object.?status.?conditions.orValue([]).exists(c, c.?type.orValue('') == 'Progressing' && c.?reason.orValue('') == 'ProgressDeadlineExceeded')`,
			Message: `'progress deadline exceeded: ' + object.status.conditions.filter(c, c.?type.orValue('') == 'Progressing').map(c, c.?message.orValue(''))[0]`},
		{Health: corev1beta1.HealthDegraded, Reason: "ReplicaFailure", When: replicaFailure, Message: replicaFailureMessage},
		{Health: corev1beta1.HealthProgressing, Reason: "ReplicasNotUpdated",
			When:    updatedReplicas + ` < ` + specReplicas,
			Message: `'rolling out: ' + string(` + updatedReplicas + `) + ' of ' + string(` + specReplicas + `) + ' replicas updated'`},
		{Health: corev1beta1.HealthProgressing, Reason: "OldReplicasTerminating",
			When:    statusReplicas + ` > ` + updatedReplicas,
			Message: `'rolling out: ' + string(` + statusReplicas + ` - ` + updatedReplicas + `) + ' old replicas pending termination'`},
		{Health: corev1beta1.HealthProgressing, Reason: "ReplicasTerminating",
			When:    statusReplicas + ` > ` + specReplicas,
			Message: `string(` + statusReplicas + ` - ` + specReplicas + `) + ' replicas pending termination'`},
		{Health: corev1beta1.HealthProgressing, Reason: "ReplicasNotAvailable",
			When:    availableReplicas + ` < ` + updatedReplicas,
			Message: `'rolling out: ' + string(` + availableReplicas + `) + ' of ' + string(` + updatedReplicas + `) + ' updated replicas available'`},
		{Health: corev1beta1.HealthHealthy, Reason: "ReplicasAvailable", When: `true`,
			Message: `string(` + availableReplicas + `) + ' of ' + string(` + specReplicas + `) + ' replicas updated and available'`},
	},
	{Group: "apps", Kind: "StatefulSet"}: {
		generationRule,
		{Health: corev1beta1.HealthHealthy, Reason: "OnDeleteStrategy", When: onDelete,
			Message: `'the StatefulSet updates a Pod only when it is deleted (updateStrategy OnDelete)'`},
		{Health: corev1beta1.HealthProgressing, Reason: "ReplicasNotReady",
			When:    readyReplicas + ` < ` + specReplicas,
			Message: `string(` + readyReplicas + `) + ' of ' + string(` + specReplicas + `) + ' replicas ready'`},
		{Health: corev1beta1.HealthProgressing, Reason: "ReplicasTerminating",
			When:    statusReplicas + ` > ` + specReplicas,
			Message: `string(` + statusReplicas + ` - ` + specReplicas + `) + ' replicas pending termination'`},
		{Health: corev1beta1.HealthProgressing, Reason: "PartitionRollingUpdate",
			When:    partition + ` > 0 && ` + updatedReplicas + ` < ` + specReplicas + ` - ` + partition,
			Message: `'rolling out above partition ' + string(` + partition + `) + ': ' + string(` + updatedReplicas + `) + ' of ' + string(` + specReplicas + ` - ` + partition + `) + ' replicas updated'`},
		{Health: corev1beta1.HealthHealthy, Reason: "PartitionRolledOut", When: partition + ` > 0`,
			Message: `'rolled out above partition ' + string(` + partition + `) + ': ' + string(` + updatedReplicas + `) + ' replicas updated'`},
		{Health: corev1beta1.HealthProgressing, Reason: "RevisionNotUpdated",
			When:    `object.?status.?updateRevision.orValue('') != object.?status.?currentRevision.orValue('')`,
			Message: `'rolling out revision ' + object.?status.?updateRevision.orValue('') + ': ' + string(` + updatedReplicas + `) + ' of ' + string(` + specReplicas + `) + ' replicas updated'`},
		{Health: corev1beta1.HealthHealthy, Reason: "ReplicasReady", When: `true`,
			Message: `string(` + readyReplicas + `) + ' of ' + string(` + specReplicas + `) + ' replicas ready at revision ' + object.?status.?currentRevision.orValue('')`},
	},
	{Group: "apps", Kind: "DaemonSet"}: {
		generationRule,
		{Health: corev1beta1.HealthProgressing, Reason: "NotScheduled",
			When:    `!object.?status.?desiredNumberScheduled.hasValue()`,
			Message: `'the DaemonSet controller has not counted the nodes to run on yet'`},
		{Health: corev1beta1.HealthHealthy, Reason: "OnDeleteStrategy", When: onDelete,
			Message: `'the DaemonSet updates a Pod only when it is deleted (updateStrategy OnDelete)'`},
		{Health: corev1beta1.HealthProgressing, Reason: "PodsNotUpdated",
			When:    updatedScheduled + ` < ` + desiredScheduled,
			Message: `'rolling out: ' + string(` + updatedScheduled + `) + ' of ' + string(` + desiredScheduled + `) + ' Pods updated'`},
		{Health: corev1beta1.HealthProgressing, Reason: "PodsNotAvailable",
			When:    numberAvailable + ` < ` + desiredScheduled,
			Message: `string(` + numberAvailable + `) + ' of ' + string(` + desiredScheduled + `) + ' Pods available'`},
		{Health: corev1beta1.HealthHealthy, Reason: "PodsAvailable", When: `true`,
			Message: `string(` + numberAvailable + `) + ' of ' + string(` + desiredScheduled + `) + ' Pods updated and available'`},
	},
	{Group: "apps", Kind: "ReplicaSet"}: {
		generationRule,
		{Health: corev1beta1.HealthDegraded, Reason: "ReplicaFailure", When: replicaFailure, Message: replicaFailureMessage},
		{Health: corev1beta1.HealthProgressing, Reason: "ReplicasNotAvailable",
			When:    availableReplicas + ` < ` + specReplicas,
			Message: `string(` + availableReplicas + `) + ' of ' + string(` + specReplicas + `) + ' replicas available'`},
		{Health: corev1beta1.HealthProgressing, Reason: "ReplicasTerminating",
			When:    statusReplicas + ` > ` + specReplicas,
			Message: `string(` + statusReplicas + ` - ` + specReplicas + `) + ' replicas pending termination'`},
		{Health: corev1beta1.HealthHealthy, Reason: "ReplicasAvailable", When: `true`,
			Message: `string(` + availableReplicas + `) + ' of ' + string(` + specReplicas + `) + ' replicas available'`},
	},
	{Group: "batch", Kind: "Job"}: {
		{Health: corev1beta1.HealthDegraded, Reason: "JobFailed",
			When:    `object.?status.?conditions.orValue([]).exists(c, c.?type.orValue('') in ['Failed', 'FailureTarget'] && c.?status.orValue('') == 'True')`,
			Message: `object.status.conditions.filter(c, c.?type.orValue('') in ['Failed', 'FailureTarget'] && c.?status.orValue('') == 'True').map(c, c.?reason.orValue('') + ': ' + c.?message.orValue(''))[0]`},
		{Health: corev1beta1.HealthHealthy, Reason: "JobComplete",
			When:    `object.?status.?conditions.orValue([]).exists(c, c.?type.orValue('') == 'Complete' && c.?status.orValue('') == 'True')`,
			Message: `'completed: ' + string(object.?status.?succeeded.orValue(0)) + ' Pods succeeded'`},
		{Health: corev1beta1.HealthProgressing, Reason: "JobSuspended",
			When:    `object.?spec.?suspend.orValue(false) == true`,
			Message: `'the Job is suspended'`},
		{Health: corev1beta1.HealthProgressing, Reason: "JobRunning", When: `true`,
			Message: `'running: ' + string(object.?status.?active.orValue(0)) + ' active, ' + string(object.?status.?succeeded.orValue(0)) + ' succeeded, ' + string(object.?status.?failed.orValue(0)) + ' failed'`},
	},
	{Group: "", Kind: "Service"}: {
		{Health: corev1beta1.HealthProgressing, Reason: "LoadBalancerPending",
			When:    `object.?spec.?type.orValue('') == 'LoadBalancer' && size(` + lbIngress + `) == 0`,
			Message: `'waiting for the load balancer'`},
		{Health: corev1beta1.HealthHealthy, Reason: "LoadBalancerReady",
			When:    `object.?spec.?type.orValue('') == 'LoadBalancer'`,
			Message: `'load balancer at ' + ` + lbIngress + `.map(i, i.?ip.orValue(i.?hostname.orValue(''))).join(', ')`},
		{Health: corev1beta1.HealthHealthy, Reason: "ServiceCreated", When: `true`,
			Message: `'type ' + object.?spec.?type.orValue('ClusterIP')`},
	},
	{Group: "", Kind: "PersistentVolumeClaim"}: {
		{Health: corev1beta1.HealthDegraded, Reason: "ClaimLost", When: pvcPhase + ` == 'Lost'`,
			Message: `'the claim lost its volume ' + object.?spec.?volumeName.orValue('')`},
		{Health: corev1beta1.HealthHealthy, Reason: "ClaimBound", When: pvcPhase + ` == 'Bound'`,
			Message: `'bound to volume ' + object.?spec.?volumeName.orValue('')`},
		{Health: corev1beta1.HealthProgressing, Reason: "ClaimPending", When: pvcPhase + ` in ['', 'Pending']`,
			Message: `'waiting for a volume (a claim whose storage class binds on first use waits for a Pod)'`},
	},
}

// BuiltinRules returns the built-in health rules of a kind, nil if it has
// none. The slice is a copy.
func BuiltinRules(gk schema.GroupKind) []corev1beta1.HealthRule {
	r := builtinRules[gk]
	if r == nil {
		return nil
	}
	return append([]corev1beta1.HealthRule(nil), r...)
}

// SpecFields returns the top-level fields of spec that the built-in rules
// of a kind read, sorted; nil when they read none. Besides these, the
// built-in rules read only an object's metadata and status.
func SpecFields(gk schema.GroupKind) []string {
	return slices.Clone(builtinSpecFields[gk])
}

// builtinSpecFields are SpecFields, per kind.
var builtinSpecFields = specFieldsOf(builtinRules)

// specField finds where an expression reads a field of spec:
// object.spec.NAME or object.?spec.?NAME.
var specField = regexp.MustCompile(`object\.\??spec\.\??([A-Za-z_][A-Za-z0-9_]*)`)

// specFieldsOf returns, per kind, the top-level fields of spec that its
// rules' expressions read.
func specFieldsOf(rules map[schema.GroupKind][]corev1beta1.HealthRule) map[schema.GroupKind][]string {
	out := map[schema.GroupKind][]string{}
	for gk, kindRules := range rules {
		var fields []string
		for _, r := range kindRules {
			for _, m := range specField.FindAllStringSubmatch(r.When+" "+r.Message, -1) {
				fields = append(fields, m[1])
			}
		}
		slices.Sort(fields)
		if fields = slices.Compact(fields); len(fields) > 0 {
			out[gk] = fields
		}
	}
	return out
}

// BuiltinKinds are the kinds that have built-in rules, sorted.
func BuiltinKinds() []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(builtinRules))
	for gk := range builtinRules {
		out = append(out, gk)
	}
	slices.SortFunc(out, func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func compileBuiltins(o options) (map[schema.GroupKind]*Rules, error) {
	out := make(map[schema.GroupKind]*Rules, len(builtinRules))
	for gk, src := range builtinRules {
		r, err := compile(src, o, func(i int) string { return fmt.Sprintf("built-in rule %s of %s", src[i].Reason, gk) })
		if err != nil {
			return nil, err
		}
		out[gk] = r
	}
	return out, nil
}
