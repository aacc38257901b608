package admission

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/fedwarden/fedwarden/config/crd"
)

// typesGroup is the group of every federated kind and of the CPVs.
const typesGroup = "types.kubefed.io"

func TestObjects(t *testing.T) {
	t.Parallel()
	set, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range set.Policies {
		names = append(names, p.Name)
		checkPolicy(t, p)
	}
	// localfed waits until the first and the last are enforced, and
	// relies on the others being loaded with them.
	want := []string{ClusterSelectorPolicy, CPVSpecPolicy, FederatedNamespaceNamePolicy, FederatedSecretRolloutPolicy, ResyncAnnotationPolicy}
	if !slices.Equal(names, want) {
		t.Errorf("policies %v, want %v in this order", names, want)
	}
	var bound []string
	for _, b := range set.Bindings {
		bound = append(bound, b.Spec.PolicyName)
		if b.Name != b.Spec.PolicyName {
			t.Errorf("binding %s binds policy %s: name each binding after its policy", b.Name, b.Spec.PolicyName)
		}
		if !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
			t.Errorf("binding %s has validationActions %v, want [Deny]", b.Name, b.Spec.ValidationActions)
		}
		if b.Spec.MatchResources != nil {
			t.Errorf("binding %s narrows its policy; the policy alone says what it matches", b.Name)
		}
		checkParamRef(t, b)
		checkLabels(t, b.Name, b.Labels)
	}
	if !slices.Equal(bound, want) {
		t.Errorf("bindings bind %v, want exactly one per policy: %v", bound, want)
	}
}

// checkParamRef checks that only CPVSpecPolicy has a parameter: the
// ClusterRoleBinding CPVSpecWriter, without which it is not enforced (the
// installs that run the controller-manager by hand must keep working).
func checkParamRef(t *testing.T, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	if b.Spec.PolicyName != CPVSpecPolicy {
		if b.Spec.ParamRef != nil {
			t.Errorf("binding %s parameterises its policy", b.Name)
		}
		return
	}
	allow := admissionregistrationv1.AllowAction
	if r := b.Spec.ParamRef; r == nil || r.Name != CPVSpecWriter || r.Namespace != "" || r.Selector != nil ||
		r.ParameterNotFoundAction == nil || *r.ParameterNotFoundAction != allow {
		t.Errorf("binding %s has paramRef %+v, want the ClusterRoleBinding %s, allowing without it", b.Name, r, CPVSpecWriter)
	}
}

// checkPolicy checks what every policy must be: refusing when it cannot
// evaluate, matching only the main resources of types.kubefed.io on create
// or update (never a status write of the controllers), and saying in each
// message what is wrong.
func checkPolicy(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("policy %s: failurePolicy %v, want Fail", p.Name, p.Spec.FailurePolicy)
	}
	if p.Spec.MatchConstraints == nil || len(p.Spec.MatchConstraints.ResourceRules) == 0 {
		t.Fatalf("policy %s matches nothing", p.Name)
	}
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		if !slices.Equal(r.APIGroups, []string{typesGroup}) {
			t.Errorf("policy %s matches groups %v, want only %s", p.Name, r.APIGroups, typesGroup)
		}
		for _, res := range r.Resources {
			if strings.Contains(res, "/") {
				t.Errorf("policy %s matches subresource %s: it must never block a status write", p.Name, res)
			}
		}
		for _, op := range r.Operations {
			if op != admissionregistrationv1.Create && op != admissionregistrationv1.Update {
				t.Errorf("policy %s matches %s, want only CREATE and UPDATE", p.Name, op)
			}
		}
	}
	for i, v := range p.Spec.Validations {
		if v.MessageExpression == "" || v.Message == "" {
			t.Errorf("policy %s validation %d: want a messageExpression saying what is wrong, and a message for when it cannot be evaluated", p.Name, i)
		}
	}
	checkLabels(t, p.Name, p.Labels)
}

func checkLabels(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	if labels["app.kubernetes.io/part-of"] != "fedwarden" {
		t.Errorf("%s has labels %v, want app.kubernetes.io/part-of=fedwarden", name, labels)
	}
}

// TestResyncBoundIsTheCPVs checks that the policy refuses exactly the
// kubefed.io/resync values the ClusterPropagatedVersion cannot record.
func TestResyncBoundIsTheCPVs(t *testing.T) {
	t.Parallel()
	set, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(set.Policies, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
		return p.Name == ResyncAnnotationPolicy
	})
	if i < 0 {
		t.Fatalf("no policy %s", ResyncAnnotationPolicy)
	}
	vars := set.Policies[i].Spec.Variables
	j := slices.IndexFunc(vars, func(v admissionregistrationv1.Variable) bool { return v.Name == "maxLength" })
	if j < 0 || vars[j].Expression != strconv.Itoa(ResyncMaxLength) {
		t.Errorf("policy %s: variable maxLength %+v, want %d (ResyncMaxLength)", ResyncAnnotationPolicy, vars, ResyncMaxLength)
	}
	for _, v := range set.Policies[i].Spec.Validations {
		if !strings.Contains(v.Message, strconv.Itoa(ResyncMaxLength)) {
			t.Errorf("policy %s: message %q does not give the bound %d", ResyncAnnotationPolicy, v.Message, ResyncMaxLength)
		}
	}
	status := cpvStatusSchema(t)
	for _, field := range []struct {
		path   string
		schema apiextensionsv1.JSONSchemaProps
	}{
		{"status.resync", status.Properties["resync"]},
		{"status.clusterVersions[].resync", status.Properties["clusterVersions"].Items.Schema.Properties["resync"]},
	} {
		if field.schema.MaxLength == nil || *field.schema.MaxLength != ResyncMaxLength {
			t.Errorf("the CPV's %s has maxLength %v, the policy allows %d: keep them equal", field.path, field.schema.MaxLength, ResyncMaxLength)
		}
	}
}

// cpvStatusSchema returns the schema of the embedded CPV CRD's status.
func cpvStatusSchema(t *testing.T) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	crds, err := crd.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Name == "clusterpropagatedversions."+typesGroup {
			return c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
		}
	}
	t.Fatal("no ClusterPropagatedVersion CRD is embedded")
	return apiextensionsv1.JSONSchemaProps{}
}
