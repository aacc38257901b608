package admission

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

//go:embed policies/*.yaml
var policies embed.FS

// Names of the policies, each also the name of its binding.
const (
	// ClusterSelectorPolicy refuses a spec.placement.clusterSelector whose
	// label keys or values do not parse.
	ClusterSelectorPolicy = "fedwarden-cluster-selector"
	// CPVSpecPolicy refuses a ClusterPropagatedVersion created, or its
	// spec changed, by anyone but a subject of the ClusterRoleBinding
	// CPVSpecWriter.
	CPVSpecPolicy = "fedwarden-cpv-spec"
	// FederatedNamespaceNamePolicy refuses a FederatedNamespace that is not
	// named after the namespace it is in.
	FederatedNamespaceNamePolicy = "fedwarden-federatednamespace-name"
	// FederatedSecretRolloutPolicy refuses a FederatedSecret rolled out
	// in waves.
	FederatedSecretRolloutPolicy = "fedwarden-federatedsecret-rollout"
	// ResyncAnnotationPolicy refuses a kubefed.io/resync annotation longer
	// than ResyncMaxLength.
	ResyncAnnotationPolicy = "fedwarden-resync-annotation"
)

// ResyncMaxLength is the most characters of a kubefed.io/resync annotation:
// the maxLength of the ClusterPropagatedVersion's status.resync and
// status.clusterVersions[].resync, which record it. The policy's variable
// maxLength holds the same number (a test checks all three).
const ResyncMaxLength = 256

// Kinds of the objects in policies/.
const (
	policyKind  = "ValidatingAdmissionPolicy"
	bindingKind = "ValidatingAdmissionPolicyBinding"
)

// Set is the policies and their bindings, each list in the order of the
// files. Install every policy before any binding, so that no binding ever
// names a policy the API server does not have yet.
type Set struct {
	Policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	Bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Objects returns the policies and bindings Fedwarden ships, decoded
// strictly: an unknown field is an error.
func Objects() (Set, error) {
	names, err := fs.Glob(policies, "policies/*.yaml")
	if err != nil {
		return Set{}, fmt.Errorf("listing embedded admission policies: %w", err)
	}
	sort.Strings(names)
	var set Set
	for _, name := range names {
		if err := set.addFile(name); err != nil {
			return Set{}, fmt.Errorf("reading %s: %w", path.Base(name), err)
		}
	}
	return set, nil
}

// addFile adds every object of the embedded file name.
func (s *Set) addFile(name string) error {
	data, err := policies.ReadFile(name)
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.add(doc); err != nil {
			return err
		}
	}
}

// add decodes one YAML document into a policy or a binding; a document
// holding only comments is skipped.
func (s *Set) add(doc []byte) error {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return fmt.Errorf("decoding a document: %w", err)
	}
	switch {
	case meta == metav1.TypeMeta{}:
		return nil
	case meta.APIVersion != admissionregistrationv1.SchemeGroupVersion.String():
		return fmt.Errorf("apiVersion %q: want %s", meta.APIVersion, admissionregistrationv1.SchemeGroupVersion)
	case meta.Kind == policyKind:
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := yaml.UnmarshalStrict(doc, p); err != nil {
			return fmt.Errorf("decoding a %s: %w", policyKind, err)
		}
		s.Policies = append(s.Policies, p)
	case meta.Kind == bindingKind:
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := yaml.UnmarshalStrict(doc, b); err != nil {
			return fmt.Errorf("decoding a %s: %w", bindingKind, err)
		}
		s.Bindings = append(s.Bindings, b)
	default:
		return fmt.Errorf("kind %q: want %s or %s", meta.Kind, policyKind, bindingKind)
	}
	return nil
}
