package render

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

var ingresses = Target{Kind: ingressV1, Namespaced: true}

func TestConvertLegacyIngress(t *testing.T) {
	t.Parallel()
	oldIngresses := ingresses
	oldIngresses.Kind.Version = "v1beta1"
	tests := []struct {
		name string
		typ  Target
		in   string
		want string // "": in, unchanged
	}{
		{name: "KubeFed's sample: port number, no pathType", typ: ingresses,
			in:   `{spec: {rules: [{host: a.example.com, http: {paths: [{backend: {serviceName: web, servicePort: 80}}]}}]}}`,
			want: `{spec: {rules: [{host: a.example.com, http: {paths: [{pathType: ImplementationSpecific, backend: {service: {name: web, port: {number: 80}}}}]}}]}}`},
		{name: "port name", typ: ingresses,
			in:   `{spec: {rules: [{http: {paths: [{path: /, pathType: Prefix, backend: {serviceName: web, servicePort: http}}]}}]}}`,
			want: `{spec: {rules: [{http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}]}}]}}`},
		{name: "a string of digits is a name, as Kubernetes converts it", typ: ingresses,
			in:   `{spec: {rules: [{http: {paths: [{pathType: Exact, backend: {serviceName: web, servicePort: "80"}}]}}]}}`,
			want: `{spec: {rules: [{http: {paths: [{pathType: Exact, backend: {service: {name: web, port: {name: "80"}}}}]}}]}}`},
		{name: "serviceName alone", typ: ingresses,
			in:   `{spec: {rules: [{http: {paths: [{pathType: Exact, backend: {serviceName: web}}]}}]}}`,
			want: `{spec: {rules: [{http: {paths: [{pathType: Exact, backend: {service: {name: web}}}]}}]}}`},
		{name: "every rule and path, rules without http kept", typ: ingresses,
			in: `{spec: {rules: [{host: a}, {http: {paths: [{path: /a, backend: {serviceName: a, servicePort: 1}}, {path: /b, pathType: Prefix, backend: {service: {name: b, port: {number: 2}}}}]}},
				{http: {paths: [{path: /c, backend: {resource: {kind: Bucket, name: c}}}]}}]}}`,
			want: `{spec: {rules: [{host: a}, {http: {paths: [{path: /a, pathType: ImplementationSpecific, backend: {service: {name: a, port: {number: 1}}}}, {path: /b, pathType: Prefix, backend: {service: {name: b, port: {number: 2}}}}]}},
				{http: {paths: [{path: /c, pathType: ImplementationSpecific, backend: {resource: {kind: Bucket, name: c}}}]}}]}}`},
		{name: "spec.backend becomes spec.defaultBackend", typ: ingresses,
			in:   `{metadata: {labels: {app: web}}, spec: {ingressClassName: nginx, backend: {serviceName: web, servicePort: 8080}}}`,
			want: `{metadata: {labels: {app: web}}, spec: {ingressClassName: nginx, defaultBackend: {service: {name: web, port: {number: 8080}}}}}`},
		{name: "a resource spec.backend is moved as it is", typ: ingresses,
			in:   `{spec: {backend: {resource: {apiGroup: example.io, kind: Bucket, name: b}}}}`,
			want: `{spec: {defaultBackend: {resource: {apiGroup: example.io, kind: Bucket, name: b}}}}`},
		{name: "already v1: unchanged", typ: ingresses,
			in: `{spec: {defaultBackend: {service: {name: web, port: {number: 80}}}, rules: [{http: {paths: [{pathType: Prefix, path: /, backend: {service: {name: web, port: {name: http}}}}]}}]}}`},
		{name: "spec.backend beside spec.defaultBackend: left for the member to refuse", typ: ingresses,
			in: `{spec: {backend: {serviceName: a, servicePort: 80}, defaultBackend: {service: {name: b, port: {number: 80}}}}}`},
		{name: "service beside serviceName: left for the member to refuse", typ: ingresses,
			in: `{spec: {rules: [{http: {paths: [{pathType: Prefix, backend: {service: {name: b}, serviceName: a, servicePort: 80}}]}}]}}`},
		{name: "a port neither integer nor string: left for the member to refuse", typ: ingresses,
			in: `{spec: {rules: [{http: {paths: [{pathType: Prefix, backend: {serviceName: a, servicePort: 80.5}}]}}]}}`},
		{name: "no spec", typ: ingresses, in: `{metadata: {labels: {app: web}}}`},
		{name: "other version", typ: oldIngresses,
			in: `{spec: {backend: {serviceName: a, servicePort: 80}, rules: [{http: {paths: [{backend: {serviceName: a, servicePort: 80}}]}}]}}`},
		{name: "other kind", typ: deployments,
			in: `{spec: {backend: {serviceName: a, servicePort: 80}, rules: [{http: {paths: [{backend: {serviceName: a}}]}}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := decodeObject(t, tt.in)
			want := in
			if tt.want != "" {
				want = decodeObject(t, tt.want)
			}
			got := convertLegacyIngress(tt.typ, in)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("converted:\n%s", diff.Diff(want, got))
			}
			if original := decodeObject(t, tt.in); !equality.Semantic.DeepEqual(in, original) {
				t.Errorf("the input was changed:\n%s", diff.Diff(original, in))
			}
		})
	}
}

func TestBackendPort(t *testing.T) {
	t.Parallel()
	tests := []struct {
		port any
		want map[string]any // nil: not converted
	}{
		{port: int64(80), want: map[string]any{"number": int64(80)}},
		{port: float64(80), want: map[string]any{"number": int64(80)}},
		{port: 80.5},
		{port: float64(1 << 60)},
		{port: "http", want: map[string]any{"name": "http"}},
		{port: "80", want: map[string]any{"name": "80"}},
		{port: true},
		{port: nil},
	}
	for _, tt := range tests {
		got, ok := backendPort(tt.port)
		if ok != (tt.want != nil) || !equality.Semantic.DeepEqual(got, tt.want) {
			t.Errorf("backendPort(%#v) = %v, %v; want %v", tt.port, got, ok, tt.want)
		}
	}
}

// TestRenderKubeFedIngressSample renders KubeFed's sample1 FederatedIngress,
// as written, into the networking.k8s.io/v1 Ingress written to members.
func TestRenderKubeFedIngressSample(t *testing.T) {
	t.Parallel()
	fed := readFederated(t, sample1Ingress)
	spec, err := ParseSpec(fed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := WithOverrides(ingresses, fed, spec.OverridesFor("cluster1"))
	if err != nil {
		t.Fatal(err)
	}
	want := mustDecode(t, `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: test-ingress, namespace: test-namespace, labels: {kubefed.io/managed: "true"}}
spec:
  rules:
  - host: ingress.example.com
    http:
      paths:
      - pathType: ImplementationSpecific
        backend: {service: {name: test-service, port: {number: 80}}}
`)
	if !equality.Semantic.DeepEqual(got.Object, want.Object) {
		t.Errorf("rendered:\n%s", diff.Diff(want.Object, got.Object))
	}
	if original := readFederated(t, sample1Ingress); !equality.Semantic.DeepEqual(fed.Object, original.Object) {
		t.Errorf("render changed the federated object:\n%s", diff.Diff(original.Object, fed.Object))
	}
}

// decodeObject decodes s, YAML or JSON, as objects read from an API server
// are: integers are int64, other numbers float64.
func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// sample1Ingress is KubeFed's sample1 FederatedIngress, in the legacy shape.
const sample1Ingress = "../../test/conformance/kubefed-v0.10.0/sample1/federatedingress.yaml"

// readFederated reads the federated resource in file.
func readFederated(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return mustDecode(t, string(data))
}
