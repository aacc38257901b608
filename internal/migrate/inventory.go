package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeFed's API groups and the kinds the inventory reads.
var (
	kubefedConfigGVK        = schema.GroupVersionKind{Group: "core.kubefed.io", Version: "v1beta1", Kind: "KubeFedConfig"}
	kubefedClusterGVK       = schema.GroupVersionKind{Group: "core.kubefed.io", Version: "v1beta1", Kind: "KubeFedCluster"}
	typeConfigGVK           = schema.GroupVersionKind{Group: "core.kubefed.io", Version: "v1beta1", Kind: "FederatedTypeConfig"}
	propagatedVersionGVK    = schema.GroupVersionKind{Group: "core.kubefed.io", Version: "v1beta1", Kind: "PropagatedVersion"}
	clusterPropagatedGVK    = schema.GroupVersionKind{Group: "core.kubefed.io", Version: "v1beta1", Kind: "ClusterPropagatedVersion"}
	replicaSchedulingPrefGV = schema.GroupVersionKind{Group: "scheduling.kubefed.io", Version: "v1alpha1", Kind: "ReplicaSchedulingPreference"}
)

// KubeFed's CRDs that the handover replaces with Fedwarden's, besides
// those of the federated kinds.
const (
	typeConfigCRD = "federatedtypeconfigs.core.kubefed.io"
	rspCRD        = "replicaschedulingpreferences.scheduling.kubefed.io"
)

// ControllerDeployment is the name of KubeFed's controller-manager
// Deployment (its Helm chart's) and of its leader-election lock.
const ControllerDeployment = "kubefed-controller-manager"

// webhookPrefixes start the names of KubeFed's webhook configurations
// (its Helm chart's; a Namespaced install appends -NAMESPACE).
var webhookPrefixes = []string{"validations.core.kubefed.io", "mutation.core.kubefed.io"}

// Inventory is what a KubeFed install on the host holds. It carries no
// credential content: of a Secret, only its name and the names of its keys.
type Inventory struct {
	// Namespace is KubeFed's control-plane namespace.
	Namespace string `json:"namespace"`
	// Config is the KubeFedConfig's spec, nil when there is none.
	Config *unstructured.Unstructured `json:"-"`
	// ConfigName names the KubeFedConfig.
	ConfigName string `json:"kubefedConfig,omitempty"`
	// Clusters are the KubeFedClusters, by name.
	Clusters []Cluster `json:"clusters"`
	// Types are the FederatedTypeConfigs, by name.
	Types []Type `json:"types"`
	// ReplicaSchedulingPreferences counts them.
	ReplicaSchedulingPreferences int `json:"replicaSchedulingPreferences"`
	// PropagatedVersions counts KubeFed's PropagatedVersions and
	// ClusterPropagatedVersions (core.kubefed.io).
	PropagatedVersions int `json:"propagatedVersions"`
	// Controller is KubeFed's controller-manager Deployment, nil when the
	// namespace has none (KubeFed runs elsewhere, or as a process).
	Controller *Controller `json:"controller,omitempty"`
	// Webhooks name KubeFed's webhook configurations, as Kind/name.
	Webhooks []string `json:"webhooks,omitempty"`
	// LeaseDuration is the leader lease duration of the KubeFedConfig
	// (KubeFed's default when it sets none).
	LeaseDuration string `json:"leaseDuration"`

	// crds are the host's CRDs of KubeFed's groups, by name.
	crds map[string]*apiextensionsv1.CustomResourceDefinition
	// typeConfigs are KubeFed's FederatedTypeConfigs as stored.
	typeConfigs []*unstructured.Unstructured
}

// Cluster is a KubeFedCluster and what its Secret holds, by key name.
type Cluster struct {
	Name                   string            `json:"name"`
	Labels                 map[string]string `json:"labels,omitempty"`
	APIEndpoint            string            `json:"apiEndpoint"`
	CABundle               []byte            `json:"-"`
	HasCABundle            bool              `json:"hasCABundle"`
	SecretName             string            `json:"secretName"`
	SecretKeys             []string          `json:"secretKeys,omitempty"`
	SecretMissing          bool              `json:"secretMissing,omitempty"`
	DisabledTLSValidations []string          `json:"disabledTLSValidations,omitempty"`
	ProxyURL               string            `json:"proxyURL,omitempty"`
	Ready                  string            `json:"ready,omitempty"`

	// secretCA is the Secret's ca.crt, which verifies the member when
	// spec.caBundle is empty.
	secretCA []byte
}

// Type is a FederatedTypeConfig and its federated resources.
type Type struct {
	Name             string `json:"name"`
	Target           string `json:"target"`
	FederatedKind    string `json:"federatedKind"`
	FederatedCRD     string `json:"federatedCRD"`
	Propagation      string `json:"propagation"`
	StatusCollection string `json:"statusCollection,omitempty"`
	StatusType       string `json:"statusType,omitempty"`
	Resources        int    `json:"resources"`
	// OddNamespaces names FederatedNamespaces not named after their
	// namespace (only for the Namespace type).
	OddNamespaces []string `json:"oddNamespaces,omitempty"`

	spec typeSpec
}

// typeSpec is what a FederatedTypeConfig's spec says, in both shapes.
type typeSpec struct {
	targetGroup, targetVersion, targetKind, targetPlural, targetScope string
	fedGroup, fedVersion, fedKind, fedPlural, fedScope                string
}

// Controller is KubeFed's controller-manager Deployment.
type Controller struct {
	Name     string `json:"name"`
	Replicas int32  `json:"replicas"`
}

// Read takes the inventory of the KubeFed install in namespace. It fails
// when the host has no KubeFedCluster kind: no KubeFed to migrate from.
func Read(ctx context.Context, c client.Client, namespace string) (*Inventory, error) {
	inv := &Inventory{Namespace: namespace, LeaseDuration: defaultLeaseDuration.String()}
	steps := []func(context.Context, client.Client) error{
		inv.readClusters, inv.readConfig, inv.readTypes, inv.readCounts, inv.readController, inv.readWebhooks, inv.readCRDs,
	}
	for _, step := range steps {
		if err := step(ctx, c); err != nil {
			return nil, err
		}
	}
	return inv, nil
}

// list lists gvk in the inventory's namespace (all namespaces when all is
// set); a kind the host does not serve lists nothing.
func (inv *Inventory) list(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, all bool) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	var opts []client.ListOption
	if !all {
		opts = append(opts, client.InNamespace(inv.Namespace))
	}
	err := c.List(ctx, l, opts...)
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	return l.Items, nil
}

func (inv *Inventory) readClusters(ctx context.Context, c client.Client) error {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(kubefedClusterGVK.GroupVersion().WithKind("KubeFedClusterList"))
	err := c.List(ctx, l, client.InNamespace(inv.Namespace))
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("the host serves no KubeFedCluster kind (core.kubefed.io/v1beta1): KubeFed is not installed there, so there is nothing to migrate from")
	}
	if err != nil {
		return fmt.Errorf("listing KubeFedClusters in namespace %s: %w", inv.Namespace, err)
	}
	for i := range l.Items {
		cl, err := inv.cluster(ctx, c, &l.Items[i])
		if err != nil {
			return err
		}
		inv.Clusters = append(inv.Clusters, cl)
	}
	return nil
}

// cluster reads one KubeFedCluster and the key names of its Secret.
func (inv *Inventory) cluster(ctx context.Context, c client.Client, u *unstructured.Unstructured) (Cluster, error) {
	cl := Cluster{Name: u.GetName(), Labels: u.GetLabels()}
	cl.APIEndpoint, _, _ = unstructured.NestedString(u.Object, "spec", "apiEndpoint")
	cl.SecretName, _, _ = unstructured.NestedString(u.Object, "spec", "secretRef", "name")
	cl.ProxyURL, _, _ = unstructured.NestedString(u.Object, "spec", "proxyURL")
	cl.DisabledTLSValidations, _, _ = unstructured.NestedStringSlice(u.Object, "spec", "disabledTLSValidations")
	if ca, _, _ := unstructured.NestedString(u.Object, "spec", "caBundle"); ca != "" {
		typed := struct {
			Spec struct {
				CABundle []byte `json:"caBundle"`
			} `json:"spec"`
		}{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &typed); err != nil {
			return cl, fmt.Errorf("KubeFedCluster %s: spec.caBundle: %w", cl.Name, err)
		}
		cl.CABundle, cl.HasCABundle = typed.Spec.CABundle, true
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cond := range conds {
		if m, ok := cond.(map[string]any); ok && m["type"] == "Ready" {
			cl.Ready, _ = m["status"].(string)
		}
	}
	if cl.SecretName == "" {
		return cl, nil
	}
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: inv.Namespace, Name: cl.SecretName}, secret)
	switch {
	case apierrors.IsNotFound(err):
		cl.SecretMissing = true
		return cl, nil
	case err != nil:
		return cl, fmt.Errorf("reading Secret %s/%s of KubeFedCluster %s: %w", inv.Namespace, cl.SecretName, cl.Name, err)
	}
	for k := range secret.Data {
		cl.SecretKeys = append(cl.SecretKeys, k)
	}
	slices.Sort(cl.SecretKeys)
	cl.secretCA = secret.Data["ca.crt"]
	return cl, nil
}

func (inv *Inventory) readConfig(ctx context.Context, c client.Client) error {
	items, err := inv.list(ctx, c, kubefedConfigGVK, false)
	if err != nil || len(items) == 0 {
		return err
	}
	inv.Config = &items[0]
	inv.ConfigName = items[0].GetName()
	if d, ok := durationAt(inv.Config, "leaderElect", "leaseDuration"); ok {
		inv.LeaseDuration = d.String()
	}
	return nil
}

func (inv *Inventory) readTypes(ctx context.Context, c client.Client) error {
	items, err := inv.list(ctx, c, typeConfigGVK, false)
	if err != nil {
		return err
	}
	for i := range items {
		u := &items[i]
		if u.GetNamespace() == "" {
			continue // a cluster-scoped FederatedTypeConfig is Fedwarden's, not KubeFed's
		}
		inv.typeConfigs = append(inv.typeConfigs, u)
		t := newType(u)
		if err := inv.countResources(ctx, c, &t); err != nil {
			return err
		}
		inv.Types = append(inv.Types, t)
	}
	slices.SortFunc(inv.Types, func(a, b Type) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// newType reads a FederatedTypeConfig's spec.
func newType(u *unstructured.Unstructured) Type {
	s := func(path ...string) string {
		v, _, _ := unstructured.NestedString(u.Object, append([]string{"spec"}, path...)...)
		return v
	}
	spec := typeSpec{
		targetGroup: s("targetType", "group"), targetVersion: s("targetType", "version"), targetKind: s("targetType", "kind"),
		targetPlural: s("targetType", "pluralName"), targetScope: s("targetType", "scope"),
		fedGroup: s("federatedType", "group"), fedVersion: s("federatedType", "version"), fedKind: s("federatedType", "kind"),
		fedPlural: s("federatedType", "pluralName"), fedScope: s("federatedType", "scope"),
	}
	t := Type{Name: u.GetName(), FederatedKind: spec.fedKind, Propagation: s("propagation"), StatusCollection: s("statusCollection"), spec: spec}
	t.Target = spec.targetPlural
	if spec.targetGroup != "" {
		t.Target += "." + spec.targetGroup
	}
	t.FederatedCRD = spec.fedPlural + "." + spec.fedGroup
	if kind := s("statusType", "kind"); kind != "" {
		t.StatusType = kind
	}
	return t
}

// countResources counts the federated resources of t, and notes the
// FederatedNamespaces Fedwarden would refuse.
func (inv *Inventory) countResources(ctx context.Context, c client.Client, t *Type) error {
	gvk := schema.GroupVersionKind{Group: t.spec.fedGroup, Version: t.spec.fedVersion, Kind: t.spec.fedKind}
	items, err := inv.list(ctx, c, gvk, true)
	if err != nil {
		return err
	}
	t.Resources = len(items)
	if t.spec.targetGroup == "" && t.spec.targetKind == "Namespace" {
		for _, it := range items {
			if it.GetName() != it.GetNamespace() {
				t.OddNamespaces = append(t.OddNamespaces, it.GetNamespace()+"/"+it.GetName())
			}
		}
	}
	return nil
}

func (inv *Inventory) readCounts(ctx context.Context, c client.Client) error {
	for _, gvk := range []schema.GroupVersionKind{propagatedVersionGVK, clusterPropagatedGVK} {
		items, err := inv.list(ctx, c, gvk, true)
		if err != nil {
			return err
		}
		inv.PropagatedVersions += len(items)
	}
	items, err := inv.list(ctx, c, replicaSchedulingPrefGV, true)
	inv.ReplicaSchedulingPreferences = len(items)
	return err
}

func (inv *Inventory) readController(ctx context.Context, c client.Client) error {
	d := &appsv1.Deployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: inv.Namespace, Name: ControllerDeployment}, d)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading Deployment %s/%s: %w", inv.Namespace, ControllerDeployment, err)
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	inv.Controller = &Controller{Name: d.Name, Replicas: replicas}
	return nil
}

func (inv *Inventory) readWebhooks(ctx context.Context, c client.Client) error {
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		names, err := names(ctx, c, admissionregistrationv1.SchemeGroupVersion.WithKind(kind))
		if err != nil {
			return err
		}
		for _, name := range names {
			if isKubeFedWebhook(name, inv.Namespace) {
				inv.Webhooks = append(inv.Webhooks, kind+"/"+name)
			}
		}
	}
	return nil
}

// names lists the names of the objects of a cluster-scoped kind, reading
// only their metadata.
func names(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) ([]string, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, l); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", gvk.Kind, err)
	}
	out := make([]string, 0, len(l.Items))
	for _, it := range l.Items {
		out = append(out, it.Name)
	}
	return out, nil
}

// isKubeFedWebhook tells whether a webhook configuration is one KubeFed's
// chart installs for the control plane in namespace.
func isKubeFedWebhook(name, namespace string) bool {
	for _, p := range webhookPrefixes {
		if name == p || name == p+"-"+namespace {
			return true
		}
	}
	return false
}

func (inv *Inventory) readCRDs(ctx context.Context, c client.Client) error {
	l := &apiextensionsv1.CustomResourceDefinitionList{}
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := c.List(ctx, u); err != nil {
		return fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), l); err != nil {
		return fmt.Errorf("decoding CustomResourceDefinitions: %w", err)
	}
	inv.crds = map[string]*apiextensionsv1.CustomResourceDefinition{}
	for i := range l.Items {
		crd := &l.Items[i]
		if isKubeFedGroup(crd.Spec.Group) {
			inv.crds[crd.Name] = crd
		}
	}
	return nil
}
