package federatedtype

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedwarden/fedwarden/config/crd"
	"github.com/fedwarden/fedwarden/internal/dependencies"
)

// baseCRDName names the generated CRD whose shared parts (placement,
// overrides, status, template metadata) every Federated<Kind> reuses.
const baseCRDName = "federateddeployments.types.kubefed.io"

// baseKind is the kind of the base CRD, replaced in the messages reused.
const baseKind = "FederatedDeployment"

// Labels of the CRDs built here.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "fedwarden"
)

// retainsReplicas are the targets, as resource.group, whose
// Federated<Kind> has spec.retainReplicas.
var retainsReplicas = map[string]bool{"deployments.apps": true, "replicasets.apps": true}

// shipped loads Fedwarden's embedded CRDs once.
var shipped = sync.OnceValues(crd.Objects)

// Shipped returns the CRD of t's Federated<Kind> that Fedwarden ships
// (config/crd), such as the FederatedDeployment's, or nil when it ships
// none: that CRD is installed with Fedwarden and never generated.
func Shipped(t Type) (*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := shipped()
	if err != nil {
		return nil, err
	}
	for _, c := range crds {
		if c.Name == t.CRDName() && c.Spec.Names.Kind == t.FederatedKind() {
			return c.DeepCopy(), nil
		}
	}
	return nil, nil
}

// baseVersion returns a copy of the only version of the base CRD.
func baseVersion() (*apiextensionsv1.CustomResourceDefinitionVersion, error) {
	crds, err := shipped()
	if err != nil {
		return nil, err
	}
	for _, c := range crds {
		if c.Name != baseCRDName {
			continue
		}
		if len(c.Spec.Versions) != 1 || c.Spec.Versions[0].Schema == nil || c.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("embedded CRD %s: want one version with a schema", baseCRDName)
		}
		return c.Spec.Versions[0].DeepCopy(), nil
	}
	return nil, fmt.Errorf("embedded CRD %s is missing", baseCRDName)
}

// metadataSchema returns the schema of the base CRD's template metadata:
// name, namespace, labels, annotations and finalizers.
func metadataSchema() (*apiextensionsv1.JSONSchemaProps, error) {
	v, err := baseVersion()
	if err != nil {
		return nil, err
	}
	meta, ok := property(v.Schema.OpenAPIV3Schema, "spec", "template", "metadata")
	if !ok {
		return nil, fmt.Errorf("embedded CRD %s has no spec.template.metadata", baseCRDName)
	}
	return meta, nil
}

// property returns the schema at path under s.
func property(s *apiextensionsv1.JSONSchemaProps, path ...string) (*apiextensionsv1.JSONSchemaProps, bool) {
	for _, name := range path {
		p, ok := s.Properties[name]
		if !ok {
			return nil, false
		}
		s = &p
	}
	return s, true
}

// PreserveUnknownTemplate returns the template schema used when the host
// publishes no schema of the target: any fields are kept, but the metadata
// is typed as in every template, so that labels and annotations are
// checked and the name rule applies.
func PreserveUnknownTemplate() (*apiextensionsv1.JSONSchemaProps, error) {
	meta, err := metadataSchema()
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSONSchemaProps{
		Type:                   "object",
		XPreserveUnknownFields: preserve(true),
		Properties:             map[string]apiextensionsv1.JSONSchemaProps{"metadata": *meta},
	}, nil
}

// NewCRD returns the CRD of t's Federated<Kind>: placement, overrides and
// status are those of the FederatedDeployment, spec.template is template
// (nil: PreserveUnknownTemplate), and spec.retainReplicas is kept for
// Deployments and ReplicaSets only.
func NewCRD(t Type, template *apiextensionsv1.JSONSchemaProps) (*apiextensionsv1.CustomResourceDefinition, error) {
	v, err := baseVersion()
	if err != nil {
		return nil, err
	}
	if template == nil {
		if template, err = PreserveUnknownTemplate(); err != nil {
			return nil, err
		}
	}
	root, err := rootSchema(t, v.Schema.OpenAPIV3Schema, template)
	if err != nil {
		return nil, err
	}
	gv := t.FederatedGroupVersion()
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   t.CRDName(),
			Labels: map[string]string{labelManagedBy: managedBy},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gv.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     t.FederatedPlural(),
				Singular:   lower(t.FederatedKind()),
				Kind:       t.FederatedKind(),
				ListKind:   t.FederatedKind() + "List",
				Categories: []string{"fedwarden", "federated"},
			},
			Scope: apiextensionsv1.ResourceScope(t.FederatedScope()),
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:                     gv.Version,
				Served:                   true,
				Storage:                  true,
				Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root},
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: v.AdditionalPrinterColumns,
			}},
		},
	}, nil
}

// rootSchema builds the Federated<Kind>'s schema from the base's.
func rootSchema(t Type, base, template *apiextensionsv1.JSONSchemaProps) (*apiextensionsv1.JSONSchemaProps, error) {
	props := map[string]apiextensionsv1.JSONSchemaProps{"template": *template.DeepCopy()}
	shared := []string{"placement", "overrides", "driftPolicy", "rollout"}
	if retainsReplicas[t.Target.Resource()] {
		shared = append(shared, "retainReplicas")
	}
	if dependencies.HasPodTemplate(schema.GroupKind{Group: t.Target.Group, Kind: t.Target.Kind}) {
		shared = append(shared, "propagateDependencies")
	}
	for _, name := range shared {
		p, ok := property(base, "spec", name)
		if !ok {
			return nil, fmt.Errorf("embedded CRD %s has no spec.%s", baseCRDName, name)
		}
		props[name] = *p
	}
	root := &apiextensionsv1.JSONSchemaProps{
		Description: fmt.Sprintf("%s places a %s on member clusters.", t.FederatedKind(), t.Target.Kind),
		Type:        "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {
				Description: fmt.Sprintf("%sSpec is a %s template with its placement and per-cluster overrides.", t.FederatedKind(), t.Target.Kind),
				Type:        "object",
				Properties:  props,
			},
		},
		XValidations: rootRules(t, base.XValidations, template),
	}
	for _, name := range []string{"apiVersion", "kind", "metadata", "status"} {
		p, ok := base.Properties[name]
		if !ok {
			return nil, errors.New("embedded CRD " + baseCRDName + " has no " + name)
		}
		root.Properties[name] = p
	}
	return root, nil
}

// rootRules returns the base's CEL rules, its kind replaced by t's. The
// base's only rule on the template reads spec.template.metadata.name: it is
// left out if template does not type that field (CEL could not compile it).
func rootRules(t Type, rules apiextensionsv1.ValidationRules, template *apiextensionsv1.JSONSchemaProps) apiextensionsv1.ValidationRules {
	_, typedName := property(template, "metadata", "name")
	var out apiextensionsv1.ValidationRules
	for _, r := range rules {
		if strings.Contains(r.Rule, "spec.template") && !typedName {
			continue
		}
		r.Message = strings.ReplaceAll(r.Message, baseKind, t.FederatedKind())
		out = append(out, r)
	}
	return out
}
