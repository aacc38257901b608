package copyhealth_test

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
)

// readObject reads a member object from a YAML file, as an informer holds it.
func readObject(path string) *unstructured.Unstructured {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		panic(err)
	}
	obj := map[string]any{}
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// The healthRules of docs/health.md's example, for cert-manager's
// Certificate, with the built-in rules of Deployment and PVC beside them.
func Example() {
	e, err := copyhealth.New()
	if err != nil {
		panic(err)
	}
	var ftc corev1beta1.FederatedTypeConfig
	b, err := os.ReadFile("testdata/ftc-certificates.yaml")
	if err != nil {
		panic(err)
	}
	if err := yaml.UnmarshalStrict(b, &ftc); err != nil {
		panic(err)
	}
	gk := schema.GroupKind{Group: ftc.Spec.TargetType.Group, Kind: ftc.Spec.TargetType.Kind}
	if err := e.SetRules(gk, ftc.Spec.HealthRules); err != nil {
		panic(err)
	}
	for _, name := range []string{
		"certificate-ready", "certificate-issuing", "certificate-failed",
		"deployment-rolling", "deployment-progress-deadline", "pvc-lost",
	} {
		obj := readObject("testdata/" + name + ".yaml")
		r := e.Evaluate(obj)
		fmt.Printf("%-28s %-11s %-24s %s\n", name, r.Health, r.Reason, r.Message)
	}

	// Rules that do not compile are refused with CEL's message, and every
	// object of the kind is Unknown until they are fixed.
	err = e.SetRules(gk, []corev1beta1.HealthRule{{Health: corev1beta1.HealthHealthy, When: "object.status.ready"}, {Health: corev1beta1.HealthDegraded, When: "status.failed"}})
	fmt.Println(err)
	r := e.Evaluate(readObject("testdata/certificate-ready.yaml"))
	fmt.Println(r.Health, r.Reason)
	// Output:
	// certificate-ready            Healthy     Ready                    valid until 2027-03-01T09:00:00Z
	// certificate-issuing          Progressing Issuing                  Issuing certificate as Secret does not exist
	// certificate-failed           Degraded    IssuingFailed            The certificate request has failed to complete and will be retried: the ACME order was rejected
	// deployment-rolling           Progressing ReplicasNotUpdated       rolling out: 2 of 3 replicas updated
	// deployment-progress-deadline Degraded    ProgressDeadlineExceeded progress deadline exceeded: ReplicaSet "web-7c9d8f6b4" has timed out progressing.
	// pvc-lost                     Degraded    ClaimLost                the claim lost its volume pvc-8d2c4f0e-1b7a-4c39-9f52-2e6b1d3a7c90
	// healthRules[1].when: ERROR: <input>:1:1: undeclared reference to 'status' (in container '')
	//  | status.failed
	//  | ^
	// Unknown InvalidHealthRules
}
