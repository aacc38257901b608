package registration

import (
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Groups and resources the isolation policy guards.
const (
	typesGroup        = "types.kubefed.io"
	coreGroup         = "core.kubefed.io"
	eventsGroup       = "events.k8s.io"
	coordinationGroup = "coordination.k8s.io"
	cpvs              = "clusterpropagatedversions"
	clusters          = "federatedclusters"
	events            = "events"
	leases            = "leases"
)

// Bounds of the leaseDurationSeconds an agent may set on its Lease, which
// the isolation policy enforces and `fedwarden agent --lease-duration` must
// respect: a shorter Lease makes its cluster flap between Ready and not on
// a slow network; a longer one keeps the cluster of an agent that died
// Ready, and its copies counted as propagated, for too long.
const (
	MinAgentLeaseDuration = 10 * time.Second
	MaxAgentLeaseDuration = 10 * time.Minute
)

// agentUserPattern matches the user name of every agent's ServiceAccount on
// the host, in any namespace: system:serviceaccount:NS:fedwarden-agent-NAME.
const agentUserPattern = `^system:serviceaccount:[^:]+:` + AgentPrefix + `[^:]*$`

// isolationVariables are the CEL variables of the policy. The cluster is
// the part of the ServiceAccount's name after AgentPrefix. Entries of
// status.clusterVersions are compared as maps by clusterName, so that their
// order does not matter.
func isolationVariables() []admissionregistrationv1.Variable {
	others := func(obj string) string {
		return obj + ".?status.?clusterVersions.orValue([])" +
			".filter(e, e.clusterName != variables.cluster)" +
			".transformMapEntry(i, e, {e.clusterName: e})"
	}
	rest := func(obj string) string {
		return obj + ".?status.orValue({}).transformMap(k, v, k != 'clusterVersions', v)"
	}
	changedKeys := func(before, after string) string {
		return fmt.Sprintf("%[2]s.filter(k, !(k in %[1]s) || %[2]s[k] != %[1]s[k]) + %[1]s.filter(k, !(k in %[2]s))", before, after)
	}
	return append([]admissionregistrationv1.Variable{
		{Name: "cluster", Expression: fmt.Sprintf("request.userInfo.username.split(':')[3].substring(%d)", len(AgentPrefix))},
		{Name: "isCPV", Expression: fmt.Sprintf("request.resource.group == '%s' && request.resource.resource == '%s'", typesGroup, cpvs)},
		{Name: "othersBefore", Expression: others("oldObject")},
		{Name: "othersAfter", Expression: others("object")},
		{Name: "changedClusters", Expression: changedKeys("variables.othersBefore", "variables.othersAfter")},
		{Name: "restBefore", Expression: rest("oldObject")},
		{Name: "restAfter", Expression: rest("object")},
		{Name: "changedFields", Expression: changedKeys("variables.restBefore", "variables.restAfter")},
	}, laneVariables()...)
}

// laneVariables are the CEL variables of laneValidations.
func laneVariables() []admissionregistrationv1.Variable {
	own := func(obj string) string {
		return obj + ".?status.?clusterVersions.orValue([]).filter(e, e.clusterName == variables.cluster)"
	}
	listed := func(list string) string {
		return "object.?spec.?" + list + ".orValue([]).exists(c, c.name == variables.cluster)"
	}
	return []admissionregistrationv1.Variable{
		// The control-plane namespace: the agent's ServiceAccount's.
		{Name: "controlPlane", Expression: "request.userInfo.username.split(':')[2]"},
		{Name: "isEvent", Expression: fmt.Sprintf("request.resource.resource == '%s' && request.resource.group in ['', '%s']", events, eventsGroup)},
		{Name: "isLease", Expression: fmt.Sprintf("request.resource.group == '%s' && request.resource.resource == '%s'", coordinationGroup, leases)},
		// The agent's own entry, before and after; it writes the entry when
		// the entry is there after and differs from before (removing it is
		// not writing it).
		{Name: "ownBefore", Expression: own("oldObject")},
		{Name: "ownAfter", Expression: own("object")},
		{Name: "writesOwn", Expression: "size(variables.ownAfter) > 0 && variables.ownAfter != variables.ownBefore"},
		{Name: "placed", Expression: listed("clusters")},
		{Name: "removing", Expression: listed("removals")},
		{Name: "leaseSeconds", Expression: "object.?spec.?leaseDurationSeconds.orValue(0)"},
	}
}

// who starts every message: which agent was refused.
const who = `'the agent of cluster ' + variables.cluster + ' (' + request.userInfo.username + ')'`

// cpvName names the ClusterPropagatedVersion of the request in a message.
const cpvName = `' ClusterPropagatedVersion ' + request.namespace + '/' + request.name`

// tried says what the request tried, in a message: "create" or "change".
const tried = `(request.operation == 'CREATE' ? 'create' : 'change')`

// isolationValidations are the policy's rules, each with a message naming
// the agent and what it tried to change that it does not own.
func isolationValidations() []admissionregistrationv1.Validation {
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	rules := []admissionregistrationv1.Validation{{
		Expression: "request.resource.resource != '" + clusters + "'",
		MessageExpression: who + " + ' may not ' + (request.operation == 'DELETE' ? 'delete' : 'change') + " +
			"' FederatedCluster ' + request.name + ': agents only read from the host'",
		Reason: forbidden,
	}, {
		Expression:        "!variables.isCPV || request.operation == 'UPDATE'",
		MessageExpression: who + " + ' may not delete' + " + cpvName,
		Reason:            forbidden,
	}, {
		Expression: "!variables.isCPV || size(variables.changedClusters) == 0",
		MessageExpression: who + " + ' may only write its own entry (clusterName ' + variables.cluster + ') of status.clusterVersions; " +
			"it tried to change the entries of cluster(s) ' + variables.changedClusters.join(', ') + ' in' + " + cpvName,
		Reason: forbidden,
	}, {
		Expression: "!variables.isCPV || size(variables.changedFields) == 0",
		MessageExpression: who + " + ' may only write its own entry (clusterName ' + variables.cluster + ') of status.clusterVersions; " +
			"it tried to change status.' + variables.changedFields.join(', status.') + ', which the host owns, in' + " + cpvName,
		Reason: forbidden,
	}, {
		Expression: "!variables.isCPV || object.spec == oldObject.spec",
		MessageExpression: who + " + ' may only write its own entry (clusterName ' + variables.cluster + ') of status.clusterVersions; " +
			"it tried to change the spec, which the host owns, of' + " + cpvName,
		Reason: forbidden,
	}}
	return append(rules, laneValidations()...)
}

// laneValidations keep an agent in its lane: its entry only where the host
// placed the resource on its cluster (it may remove it anywhere, as a
// removal the host asks for in spec.removals ends with that), Events only
// in the control-plane namespace, and only its own Lease, with a duration
// within bounds.
func laneValidations() []admissionregistrationv1.Validation {
	forbidden := ptr.To(metav1.StatusReasonForbidden)
	return []admissionregistrationv1.Validation{{
		Expression: "!variables.isCPV || request.operation != 'UPDATE' || !variables.writesOwn || variables.placed",
		MessageExpression: who + " + ' may not write its entry (clusterName ' + variables.cluster + ') of status.clusterVersions in' + " + cpvName +
			" + ', whose spec.clusters does not place the resource on its cluster' + " +
			"(variables.removing ? '; its spec.removals tells the agent to delete its copy, then remove its entry' : '')",
		Reason: forbidden,
	}, {
		Expression: "!variables.isEvent || request.namespace == variables.controlPlane",
		MessageExpression: who + " + ' may only create or change Events in the control-plane namespace ' + variables.controlPlane + " +
			"'; it tried to ' + " + tried + " + ' Event ' + request.namespace + '/' + request.name",
		Reason: forbidden,
	}, {
		Expression: fmt.Sprintf("!variables.isLease || (request.namespace == variables.controlPlane && request.name == '%s' + variables.cluster)", AgentPrefix),
		MessageExpression: who + fmt.Sprintf(" + ' may only renew its own Lease ' + variables.controlPlane + '/%s' + variables.cluster + ", AgentPrefix) +
			"'; it tried to ' + " + tried + " + ' Lease ' + request.namespace + '/' + request.name",
		Reason: forbidden,
	}, {
		Expression: fmt.Sprintf("!variables.isLease || (variables.leaseSeconds >= %d && variables.leaseSeconds <= %d)",
			int(MinAgentLeaseDuration/time.Second), int(MaxAgentLeaseDuration/time.Second)),
		MessageExpression: who + " + ' may not set leaseDurationSeconds of Lease ' + request.namespace + '/' + request.name + ' to ' + string(variables.leaseSeconds) + " +
			fmt.Sprintf("': it must be between %d and %d seconds'", int(MinAgentLeaseDuration/time.Second), int(MaxAgentLeaseDuration/time.Second)),
		Reason: forbidden,
	}}
}

// IsolationPolicy returns the ValidatingAdmissionPolicy that keeps each
// Pull cluster's agent to what it owns on the host. RBAC lets every agent
// patch the status of every ClusterPropagatedVersion, since it cannot tell
// entries apart; the policy refuses an agent's update that adds, removes
// or changes another cluster's entry of status.clusterVersions, or any
// other status field, or the spec, and one that writes its own entry into
// a CPV whose spec.clusters does not place the resource on its cluster.
// RBAC lets every agent create Events in any namespace; the policy refuses
// them outside the control-plane namespace. It refuses Lease writes other
// than the agent's own Lease with a duration between MinAgentLeaseDuration
// and MaxAgentLeaseDuration. It also refuses agents any update or delete
// of FederatedClusters and any delete of ClusterPropagatedVersions, which
// RBAC already does not grant.
//
// An agent is a request whose user is the ServiceAccount
// fedwarden-agent-NAME of any namespace; NAME is its cluster.
func IsolationPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicy"),
		ObjectMeta: sharedMeta(AgentIsolationPolicyName),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
					namedRule(typesGroup, []string{cpvs, cpvs + "/status"}, admissionregistrationv1.Update, admissionregistrationv1.Delete),
					namedRule(coreGroup, []string{clusters, clusters + "/status"}, admissionregistrationv1.Update, admissionregistrationv1.Delete),
					namedRule("", []string{events}, admissionregistrationv1.Create, admissionregistrationv1.Update),
					namedRule(eventsGroup, []string{events}, admissionregistrationv1.Create, admissionregistrationv1.Update),
					namedRule(coordinationGroup, []string{leases}, admissionregistrationv1.Create, admissionregistrationv1.Update),
				},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "is-fedwarden-agent",
				Expression: "request.userInfo.username.matches('" + agentUserPattern + "')",
			}},
			Variables:   isolationVariables(),
			Validations: isolationValidations(),
		},
	}
}

// IsolationPolicyBinding returns the binding that makes the API server
// deny what IsolationPolicy refuses.
func IsolationPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   typeMeta(admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicyBinding"),
		ObjectMeta: sharedMeta(AgentIsolationPolicyName),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        AgentIsolationPolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

func namedRule(group string, resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{group},
				APIVersions: []string{"*"},
				Resources:   resources,
				Scope:       ptr.To(admissionregistrationv1.AllScopes),
			},
		},
	}
}

// sharedMeta is the metadata of an object every agent shares: only the
// managed-by label, like the Namespace.
func sharedMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelManagedBy: ManagedBy}}
}
