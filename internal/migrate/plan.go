package migrate

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// Options are the choices of the operator that shape the plan.
type Options struct {
	// DefaultRemediation is the --default-remediation the controller-manager
	// is to run with: Alert, so that the first drift report can be read
	// before anything is healed.
	DefaultRemediation typesv1beta1.Remediation
	// Rejoin creates Fedwarden's own identity in each member, as
	// `fedwarden join` does, and points the FederatedClusters at it,
	// instead of keeping KubeFed's.
	Rejoin bool
	// MemberKubeconfig names the kubeconfig whose contexts, named after
	// the clusters, create Fedwarden's identity in their member (Rejoin
	// only); a cluster without a context there uses KubeFed's token.
	MemberKubeconfig string
	// MemberContexts are the contexts of MemberKubeconfig.
	MemberContexts []string
	// PropagateRBAC grants Fedwarden's identity bind and escalate on roles
	// and clusterroles, as `fedwarden join --propagate-rbac` (Rejoin only).
	PropagateRBAC bool
	// Resources limits the rights of Fedwarden's identity to these
	// resources, as `fedwarden join --resources` (Rejoin only); empty
	// means every resource the member serves.
	Resources []registration.Resource
}

// Plan is what the handover will do and what it cannot carry over.
type Plan struct {
	Inventory *Inventory `json:"inventory"`
	// Steps are what the handover does, in order.
	Steps []Step `json:"steps"`
	// NotCarriedOver are settings and objects Fedwarden does not take over,
	// each with the reason; they do not stop the handover.
	NotCarriedOver []Finding `json:"notCarriedOver"`
	// Blockers stop the handover until they are fixed.
	Blockers []Finding `json:"blockers,omitempty"`
	// Notes say what else matters: whose identity Fedwarden uses in the
	// members, and why.
	Notes []Finding `json:"notes,omitempty"`
	// ControllerManagerArgs are the flags to start Fedwarden's
	// controller-manager with, after the handover.
	ControllerManagerArgs []string `json:"controllerManagerArgs"`
	// Rejoin is set when the handover creates Fedwarden's own identity in
	// each member (--rejoin).
	Rejoin bool `json:"rejoin,omitempty"`

	clusters []*clusterMapping
	types    []*typeMapping
}

// Step is one thing the handover does.
type Step struct {
	Action string `json:"action"`
	Object string `json:"object"`
	Detail string `json:"detail,omitempty"`
}

// Finding is a setting or object that is not carried over, or that stops
// the handover, and why.
type Finding struct {
	Subject string `json:"subject"`
	Setting string `json:"setting,omitempty"`
	Reason  string `json:"reason"`
}

func (f Finding) String() string {
	if f.Setting == "" {
		return f.Subject + ": " + f.Reason
	}
	return f.Subject + " " + f.Setting + ": " + f.Reason
}

// typeMapping is what a KubeFed FederatedTypeConfig becomes.
type typeMapping struct {
	typ federatedtype.Type
	ftc *corev1beta1.FederatedTypeConfig
	// crd is the name of the CRD of the federated kind.
	crd string
	// resources counts the federated resources the CRD keeps.
	resources int
}

// NewPlan decides, from the inventory alone, what the handover does.
func NewPlan(inv *Inventory, o Options) *Plan {
	p := &Plan{Inventory: inv, Rejoin: o.Rejoin}
	p.mapClusters(o)
	if o.Rejoin {
		p.planRejoin()
	}
	p.add("save", stateSecretName(inv.Namespace),
		"KubeFed's webhook configurations, FederatedTypeConfigs and the CRDs replaced below, and the Deployment's replicas: what --rollback puts back, "+
			"given the digest the handover prints")
	p.planStop()
	for _, w := range inv.Webhooks {
		p.add("delete", w, "KubeFed's admission, which would refuse Fedwarden's FederatedTypeConfigs")
	}
	p.planTypes()
	p.planClusters()
	p.identityNotes(o)
	args, lost := configPlan(inv.Config)
	p.NotCarriedOver = append(p.NotCarriedOver, lost...)
	if inv.PropagatedVersions > 0 {
		p.NotCarriedOver = append(p.NotCarriedOver, Finding{Subject: fmt.Sprintf("%d PropagatedVersions (core.kubefed.io)", inv.PropagatedVersions),
			Reason: "left in place and not read: Fedwarden records versions in its own ClusterPropagatedVersions (types.kubefed.io), " +
				"built from what the members hold; --rollback gives them back to KubeFed"})
	}
	p.ControllerManagerArgs = append([]string{"--namespace=" + inv.Namespace, "--default-remediation=" + string(o.DefaultRemediation)}, args...)
	return p
}

func (p *Plan) add(action, object, detail string) {
	p.Steps = append(p.Steps, Step{Action: action, Object: object, Detail: detail})
}

func (p *Plan) block(subject, format string, args ...any) {
	p.Blockers = append(p.Blockers, Finding{Subject: subject, Reason: fmt.Sprintf(format, args...)})
}

// planStop plans stopping KubeFed's controller-manager.
func (p *Plan) planStop() {
	inv := p.Inventory
	lock := "KubeFed's leader lock " + inv.Namespace + "/" + ControllerDeployment
	if c := inv.Controller; c != nil {
		p.add("scale", "Deployment "+inv.Namespace+"/"+c.Name, fmt.Sprintf("from %d to 0 replicas", c.Replicas))
	} else {
		p.add("stop", "KubeFed's controller-manager", fmt.Sprintf("no Deployment %s/%s: stop KubeFed's controller-manager yourself", inv.Namespace, ControllerDeployment))
	}
	p.add("wait", lock, "until it is no longer renewed (lease duration "+inv.LeaseDuration+"), so that KubeFed writes nothing more")
}

// planTypes plans the replacement of the CRDs of the federated kinds and
// of the FederatedTypeConfigs.
func (p *Plan) planTypes() {
	inv := p.Inventory
	if crd, ok := inv.crds[typeConfigCRD]; ok {
		p.add("replace", "CustomResourceDefinition "+typeConfigCRD, fmt.Sprintf("KubeFed's is %s, Fedwarden's Cluster-scoped: its %d FederatedTypeConfigs are saved, "+
			"deleted with it (finalizers removed: KubeFed is stopped) and created again cluster-scoped", crd.Spec.Scope, len(inv.Types)))
	}
	for _, t := range inv.Types {
		p.planType(t)
	}
	if _, ok := inv.crds[rspCRD]; ok {
		p.add("replace", "CustomResourceDefinition "+rspCRD, fmt.Sprintf("with Fedwarden's; its %d objects are kept", inv.ReplicaSchedulingPreferences))
	}
	p.add("install", "Fedwarden's CRDs and admission policies", "FederatedClusters, ClusterPropagatedVersions (types.kubefed.io), the ValidatingAdmissionPolicies")
	if len(p.types) > 0 {
		p.add("clear", "the status of the federated resources", "KubeFed's status: Fedwarden writes its own (KubeFed writes its again after --rollback)")
	}
	for _, m := range p.types {
		p.add("create", "FederatedTypeConfig "+m.ftc.Name, "propagation "+string(m.ftc.Spec.Propagation))
	}
}

// planType plans one FederatedTypeConfig.
func (p *Plan) planType(t Type) {
	subject := "FederatedTypeConfig " + t.Name
	target := federatedtype.Target{Group: t.spec.targetGroup, Version: t.spec.targetVersion, Kind: t.spec.targetKind,
		Plural: t.spec.targetPlural, Namespaced: t.spec.targetScope == string(corev1beta1.NamespaceScoped)}
	typ := federatedtype.Type{Target: target, FederatedGroup: t.spec.fedGroup, FederatedVersion: t.spec.fedVersion}
	if typ.FederatedKind() != t.spec.fedKind || typ.FederatedPlural() != t.spec.fedPlural {
		p.block(subject, "its federated kind %s (%s) is not named Federated<Kind> (%s, %s) as Fedwarden names it", t.spec.fedKind, t.spec.fedPlural, typ.FederatedKind(), typ.FederatedPlural())
		return
	}
	crd, ok := p.Inventory.crds[t.FederatedCRD]
	if !ok {
		p.NotCarriedOver = append(p.NotCarriedOver, Finding{Subject: subject, Reason: "the host has no CRD " + t.FederatedCRD + ": there is nothing to carry over"})
		return
	}
	if reason := crdDiffers(crd, typ); reason != "" {
		p.block(subject, "CRD %s %s", t.FederatedCRD, reason)
		return
	}
	ftc := federatedtype.NewTypeConfig(typ)
	ftc.Labels = map[string]string{LabelMigratedFrom: migratedFromKubeFed}
	if t.Propagation == string(corev1beta1.Disabled) {
		ftc.Spec.Propagation = corev1beta1.Disabled
	}
	if t.StatusCollection == string(corev1beta1.Enabled) && ftc.Spec.StatusCollection == nil {
		p.NotCarriedOver = append(p.NotCarriedOver, Finding{Subject: subject, Setting: "spec.statusCollection Enabled", Reason: "Fedwarden collects the status of Deployments only"})
	}
	if t.StatusType != "" {
		p.NotCarriedOver = append(p.NotCarriedOver, Finding{Subject: subject, Setting: "spec.statusType " + t.StatusType, Reason: "not kept: Fedwarden reports status on the federated resource and its ClusterPropagatedVersion"})
	}
	for _, ns := range t.OddNamespaces {
		p.NotCarriedOver = append(p.NotCarriedOver, Finding{Subject: "FederatedNamespace " + ns, Reason: "not named after its namespace: Fedwarden does not sync it (reason NameNotNamespace); its copies are left as they are"})
	}
	p.types = append(p.types, &typeMapping{typ: typ, ftc: ftc, crd: t.FederatedCRD, resources: t.Resources})
	p.add("replace", "CustomResourceDefinition "+t.FederatedCRD, fmt.Sprintf("with Fedwarden's (its spec.template schema from the host's OpenAPI, as `fedwarden enable` makes it); its %d objects are kept", t.Resources))
}

// crdDiffers says why KubeFed's CRD of a federated kind cannot be
// replaced in place by Fedwarden's, or "" when it can: the scope must
// match, and every stored version must be one Fedwarden's CRD serves.
func crdDiffers(crd *apiextensionsv1.CustomResourceDefinition, typ federatedtype.Type) string {
	if string(crd.Spec.Scope) != string(typ.FederatedScope()) {
		return fmt.Sprintf("is %s, Fedwarden's would be %s: a CRD's scope cannot change with objects in place", crd.Spec.Scope, typ.FederatedScope())
	}
	want := typ.FederatedGroupVersion().Version
	stored := crd.Status.StoredVersions
	if len(stored) == 0 {
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				stored = append(stored, v.Name)
			}
		}
	}
	if extra := slices.DeleteFunc(slices.Clone(stored), func(v string) bool { return v == want }); len(extra) > 0 {
		return fmt.Sprintf("has objects stored as %s; Fedwarden's serves %s only: migrate them to %s first", strings.Join(extra, ", "), want, want)
	}
	return ""
}

// mapClusters maps each KubeFedCluster to a FederatedCluster, and, with
// o.Rejoin, plans re-joining it with Fedwarden's identity.
func (p *Plan) mapClusters(o Options) {
	inv := p.Inventory
	if len(inv.Clusters) == 0 {
		p.block("KubeFed in namespace "+inv.Namespace, "it has no KubeFedCluster: there is no federation to take over")
	}
	for _, c := range inv.Clusters {
		m, blockers := mapCluster(c)
		if len(blockers) == 0 && o.Rejoin {
			m.rejoin, blockers = mapRejoin(c, m, inv.Namespace, o)
		}
		if len(blockers) > 0 {
			p.Blockers = append(p.Blockers, blockers...)
			continue
		}
		p.clusters = append(p.clusters, m)
	}
}

// planClusters plans a FederatedCluster per KubeFedCluster, using
// KubeFed's Secret, or, re-joined, Fedwarden's own.
func (p *Plan) planClusters() {
	ns := p.Inventory.Namespace
	for _, m := range p.clusters {
		name := m.cluster.Name
		labels := m.labels
		if m.rejoin != nil {
			secret := registration.CredentialsSecretName(name)
			p.add("create", "Secret "+ns+"/"+secret,
				fmt.Sprintf("the token of ServiceAccount %s/%s of cluster %s, bound to that cluster, endpoint %s and the CA of %s (%s), as `fedwarden join` binds it; not printed",
					ns, registration.ServiceAccountName(name), name, m.cluster.Spec.APIEndpoint, m.caSource, m.binding[corev1beta1.AnnotationCredentialsCA]))
			p.add("create", "FederatedCluster "+name, fmt.Sprintf("endpoint %s, Secret %s (Fedwarden's identity; KubeFed's Secret %s and its ServiceAccount in the member are left as they are), %d labels",
				m.cluster.Spec.APIEndpoint, secret, m.secret, labels))
			continue
		}
		p.add("annotate", "Secret "+ns+"/"+m.secret,
			fmt.Sprintf("bind its token to cluster %s, endpoint %s and the CA of %s (%s); its content is not read out nor changed",
				name, m.cluster.Spec.APIEndpoint, m.caSource, m.binding[corev1beta1.AnnotationCredentialsCA]))
		p.add("create", "FederatedCluster "+name, fmt.Sprintf("endpoint %s, Secret %s (KubeFed's identity in the member is kept), %d labels", m.cluster.Spec.APIEndpoint, m.secret, labels))
	}
}
