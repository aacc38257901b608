package federatedtype

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestNewCRD(t *testing.T) {
	t.Parallel()
	preserve, err := PreserveUnknownTemplate()
	if err != nil {
		t.Fatal(err)
	}
	typed, err := TemplateSchema([]byte(widgetDoc), widget)
	if err != nil {
		t.Fatal(err)
	}
	untypedMeta := anyObject()
	tests := []struct {
		name      string
		typ       Type
		template  *apiextensionsv1.JSONSchemaProps
		crdName   string
		group     string
		scope     apiextensionsv1.ResourceScope
		retain    bool
		nameRule  bool
		wantPaths []string // spec properties
	}{
		{name: "configmaps without a schema", typ: Type{Target: configmaps}, crdName: "federatedconfigmaps.types.kubefed.io",
			group: "types.kubefed.io", scope: apiextensionsv1.NamespaceScoped, nameRule: true},
		{name: "a typed template", typ: Type{Target: widget}, template: typed, crdName: "federatedwidgets.types.kubefed.io",
			group: "types.kubefed.io", scope: apiextensionsv1.NamespaceScoped, nameRule: true},
		{name: "replicasets retain replicas", typ: Type{Target: replicasets}, template: preserve, crdName: "federatedreplicasets.types.kubefed.io",
			group: "types.kubefed.io", scope: apiextensionsv1.NamespaceScoped, retain: true, nameRule: true},
		{name: "cluster scoped", typ: Type{Target: clusterroles}, crdName: "federatedclusterroles.types.kubefed.io",
			group: "types.kubefed.io", scope: apiextensionsv1.ClusterScoped, nameRule: true},
		{name: "FederatedNamespace is namespaced", typ: Type{Target: namespaces}, crdName: "federatednamespaces.types.kubefed.io",
			group: "types.kubefed.io", scope: apiextensionsv1.NamespaceScoped, nameRule: true},
		{name: "the name rule needs a typed metadata.name", typ: Type{Target: configmaps}, template: &untypedMeta,
			crdName: "federatedconfigmaps.types.kubefed.io", group: "types.kubefed.io", scope: apiextensionsv1.NamespaceScoped},
		{name: "another federated group", typ: Type{Target: configmaps, FederatedGroup: "fed.example.com", FederatedVersion: "v1alpha1"},
			crdName: "federatedconfigmaps.fed.example.com", group: "fed.example.com", scope: apiextensionsv1.NamespaceScoped, nameRule: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			crd, err := NewCRD(tt.typ, tt.template)
			if err != nil {
				t.Fatal(err)
			}
			checkCRDShape(t, tt.typ, crd)
			if crd.Name != tt.crdName || crd.Spec.Group != tt.group || crd.Spec.Scope != tt.scope {
				t.Errorf("CRD %s, group %s, scope %s; want %s, %s, %s", crd.Name, crd.Spec.Group, crd.Spec.Scope, tt.crdName, tt.group, tt.scope)
			}
			root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
			spec := root.Properties["spec"]
			if _, ok := spec.Properties["retainReplicas"]; ok != tt.retain {
				t.Errorf("spec.retainReplicas present: %v, want %v", ok, tt.retain)
			}
			// Every Federated<Kind> takes the whole drift policy, the ignored
			// managers too, resource-wide and per cluster.
			policy := spec.Properties["driftPolicy"]
			policies := map[string]apiextensionsv1.JSONSchemaProps{"driftPolicy": policy}
			if c := policy.Properties["clusters"].Items; c != nil && c.Schema != nil {
				policies["driftPolicy.clusters[]"] = *c.Schema
			}
			for _, where := range []string{"driftPolicy", "driftPolicy.clusters[]"} {
				m, ok := policies[where].Properties["ignoreManagers"]
				if !ok || m.Items == nil || m.Items.Schema == nil || m.Items.Schema.MaxLength == nil || *m.Items.Schema.MaxLength != 128 {
					t.Errorf("spec.%s.ignoreManagers: missing, or its items are not bounded to 128 characters", where)
				}
			}
			// Every Federated<Kind> may be rolled out in waves: without
			// spec.rollout in its schema the API server would prune it, and
			// the resource would go everywhere at once.
			if r, ok := spec.Properties["rollout"]; !ok || r.Properties["strategy"].Type != "string" || r.Properties["waves"].Type != "array" {
				t.Errorf("spec.rollout: missing, or without strategy and waves: %+v", r)
			}
			hasRule := slices.ContainsFunc(root.XValidations, func(r apiextensionsv1.ValidationRule) bool {
				return strings.Contains(r.Rule, "spec.template.metadata.name")
			})
			if hasRule != tt.nameRule {
				t.Errorf("template name rule present: %v, want %v", hasRule, tt.nameRule)
			}
			for _, r := range root.XValidations {
				if strings.Contains(r.Message, "FederatedDeployment") {
					t.Errorf("rule message names FederatedDeployment: %s", r.Message)
				}
			}
			want := tt.template
			if want == nil {
				want = preserve
			}
			if got := spec.Properties["template"]; toJSON(t, &got) != toJSON(t, want) {
				t.Errorf("spec.template is not the template given")
			}
		})
	}
}

// checkCRDShape checks what every Federated<Kind> CRD shares.
func checkCRDShape(t *testing.T, typ Type, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	base, err := baseVersion()
	if err != nil {
		t.Fatal(err)
	}
	names := crd.Spec.Names
	if names.Kind != typ.FederatedKind() || names.ListKind != typ.FederatedKind()+"List" || names.Plural != typ.FederatedPlural() ||
		names.Singular != strings.ToLower(typ.FederatedKind()) || len(names.ShortNames) != 0 {
		t.Errorf("names %+v", names)
	}
	if !slices.Equal(names.Categories, []string{"fedwarden", "federated"}) {
		t.Errorf("categories %v", names.Categories)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("versions %v", crd.Spec.Versions)
	}
	v := crd.Spec.Versions[0]
	if v.Name != typ.FederatedGroupVersion().Version || !v.Served || !v.Storage || v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("version %s served %v storage %v subresources %v", v.Name, v.Served, v.Storage, v.Subresources)
	}
	if toJSON(t, v.AdditionalPrinterColumns) != toJSON(t, base.AdditionalPrinterColumns) {
		t.Errorf("printer columns %v", v.AdditionalPrinterColumns)
	}
	root, baseRoot := v.Schema.OpenAPIV3Schema, base.Schema.OpenAPIV3Schema
	for _, path := range []string{"status", "spec.placement", "spec.overrides"} {
		if toJSON(t, at(t, root, path)) != toJSON(t, at(t, baseRoot, path)) {
			t.Errorf("%s differs from the FederatedDeployment's", path)
		}
	}
	checkStructural(t, root)
}

func TestShipped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		typ  Type
		want string
	}{
		{name: "deployments", typ: Type{Target: deployments}, want: "federateddeployments.types.kubefed.io"},
		{name: "deployments in another federated group", typ: Type{Target: deployments, FederatedGroup: "fed.example.com"}},
		{name: "configmaps", typ: Type{Target: configmaps}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			crd, err := Shipped(tt.typ)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if crd != nil {
				got = crd.Name
			}
			if got != tt.want {
				t.Errorf("Shipped = %q, want %q", got, tt.want)
			}
		})
	}
}
