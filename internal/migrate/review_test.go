package migrate

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
)

// kubefedState is a state as a handover saves it.
func kubefedState() *state {
	one := int32(1)
	return &state{
		Replicas: &one,
		Webhooks: []map[string]any{{
			"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
			"metadata": map[string]any{"name": "validations.core.kubefed.io"},
			"webhooks": []any{map[string]any{"name": "kubefedconfigs.core.kubefed.io",
				"clientConfig": map[string]any{"service": map[string]any{"namespace": "kube-federation-system", "name": "kubefed-admission-webhook", "path": "/validate"}}}},
		}},
		CRDs: []map[string]any{{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "federatedconfigmaps.types.kubefed.io"},
			"spec": map[string]any{"group": "types.kubefed.io", "scope": "Namespaced",
				"names": map[string]any{"plural": "federatedconfigmaps", "kind": "FederatedConfigMap"}},
		}},
		TypeConfigs: []map[string]any{{
			"apiVersion": "core.kubefed.io/v1beta1", "kind": "FederatedTypeConfig",
			"metadata": map[string]any{"name": "configmaps", "namespace": "kube-federation-system"},
		}},
		Rejoined: []string{"cluster1"},
	}
}

func TestReviewRefusesWhatNoHandoverSaves(t *testing.T) {
	t.Parallel()
	crb := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "escalate"},
		"roleRef": map[string]any{"kind": "ClusterRole", "name": "cluster-admin"}}
	tests := []struct {
		name   string
		change func(*state)
		want   string // the refused object, as named in the error; "" for none
	}{
		{name: "as a handover saves it", change: func(*state) {}},
		{name: "a ClusterRoleBinding among the webhooks", change: func(s *state) { s.Webhooks = append(s.Webhooks, crb) }, want: "ClusterRoleBinding escalate"},
		{name: "a ClusterRoleBinding among the CRDs", change: func(s *state) { s.CRDs = append(s.CRDs, crb) }, want: "ClusterRoleBinding escalate"},
		{name: "a ClusterRoleBinding among the type configs", change: func(s *state) { s.TypeConfigs = append(s.TypeConfigs, crb) }, want: "ClusterRoleBinding escalate"},
		{name: "a webhook of another name", change: func(s *state) { s.Webhooks[0]["metadata"] = map[string]any{"name": "validations.other.io"} },
			want: "ValidatingWebhookConfiguration validations.other.io"},
		{name: "a webhook of another control plane", change: func(s *state) {
			s.Webhooks[0]["metadata"] = map[string]any{"name": "validations.core.kubefed.io-other"}
		}, want: "ValidatingWebhookConfiguration validations.core.kubefed.io-other"},
		{name: "a CRD of another group", change: func(s *state) {
			s.CRDs[0]["metadata"] = map[string]any{"name": "federatedconfigmaps.evilkubefed.io"}
			s.CRDs[0]["spec"].(map[string]any)["group"] = "evilkubefed.io"
		}, want: "CustomResourceDefinition federatedconfigmaps.evilkubefed.io"},
		{name: "a CRD named for another", change: func(s *state) {
			s.CRDs[0]["metadata"] = map[string]any{"name": "clusterroles.rbac.authorization.k8s.io"}
		},
			want: "CustomResourceDefinition clusterroles.rbac.authorization.k8s.io"},
		{name: "a CRD with a conversion webhook", change: func(s *state) {
			s.CRDs[0]["spec"].(map[string]any)["conversion"] = map[string]any{"strategy": "Webhook"}
		}, want: "CustomResourceDefinition federatedconfigmaps.types.kubefed.io"},
		{name: "a type config in another namespace", change: func(s *state) {
			s.TypeConfigs[0]["metadata"] = map[string]any{"name": "configmaps", "namespace": "default"}
		}, want: "FederatedTypeConfig default/configmaps"},
		{name: "a type config of another group", change: func(s *state) { s.TypeConfigs[0]["apiVersion"] = "core.fedwarden.io/v1beta1" },
			want: "FederatedTypeConfig kube-federation-system/configmaps"},
		{name: "a re-joined cluster that is no name", change: func(s *state) { s.Rejoined = []string{"a\x1b[2Jb"} }, want: `re-joined cluster "a\x1b[2Jb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := kubefedState()
			tt.change(st)
			r := review(&savedState{st: st, source: "Secret kube-federation-system/fedwarden-migrate-kubefed", digest: "sha256:x"}, "kube-federation-system")
			err := r.Refusal()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Refusal() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), tt.want+": ") {
				t.Fatalf("Refusal() = %v, want one refusing %s", err, tt.want)
			}
			for _, s := range r.Steps {
				if s.Object == tt.want {
					t.Errorf("the review restores the refused %s", tt.want)
				}
			}
		})
	}
}

func TestReviewSteps(t *testing.T) {
	t.Parallel()
	r := review(&savedState{st: kubefedState(), source: "Secret kube-federation-system/fedwarden-migrate-kubefed", digest: "sha256:x"}, "kube-federation-system")
	var got []string
	for _, s := range r.Steps {
		got = append(got, s.Action+" "+s.Object+" "+s.Detail)
	}
	want := []string{
		"restore CustomResourceDefinition federatedconfigmaps.types.kubefed.io KubeFed's, in place of Fedwarden's of that name: every object of it is kept",
		"restore FederatedTypeConfig kube-federation-system/configmaps ",
		"restore ValidatingWebhookConfiguration validations.core.kubefed.io calls kubefedconfigs.core.kubefed.io: Service kube-federation-system/kubefed-admission-webhook path /validate",
		"scale Deployment kube-federation-system/kubefed-controller-manager back to 1 replicas",
		"leave Fedwarden's identity in cluster cluster1 and its credentials Secret on the host: remove them with 'fedwarden unjoin cluster1'",
		"delete Secret kube-federation-system/fedwarden-migrate-kubefed the state, once KubeFed is back",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCheckDigest(t *testing.T) {
	t.Parallel()
	r := &RollbackReview{Source: "Secret ns/fedwarden-migrate-kubefed", Digest: digest([]byte(`{}`))}
	if err := r.CheckDigest(r.Digest); err != nil {
		t.Errorf("CheckDigest(its own digest) = %v", err)
	}
	for _, d := range []string{"", digest([]byte(`{"replicas":1}`))} {
		if err := r.CheckDigest(d); !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "nothing was restored") {
			t.Errorf("CheckDigest(%q) = %v, want a refusal", d, err)
		}
	}
}

func TestDecodeStateRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	_, err := decodeState("ConfigMap ns/fedwarden-migrate-kubefed", gzipped(t, `{"secrets":[{"kind":"Secret"}]}`), nil, true)
	if err == nil || !strings.Contains(err.Error(), `unknown field "secrets"`) {
		t.Errorf("decodeState = %v, want it to refuse the field secrets", err)
	}
	saved, err := decodeState("ConfigMap ns/fedwarden-migrate-kubefed", gzipped(t, `{"replicas":1}`), nil, true)
	if err != nil || saved.digest != digest([]byte(`{"replicas":1}`)) {
		t.Errorf("decodeState = %+v, %v; want the digest of its JSON", saved, err)
	}
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A handover that finds a state says how to check it, and does not send
// the admin to roll back a state that may not be theirs.
func TestStateExistsSaysHowToCheck(t *testing.T) {
	t.Parallel()
	msg := stateExistsError("ConfigMap ns/fedwarden-migrate-kubefed").Error()
	for _, want := range []string{"--rollback --dry-run", "its digest is the one that handover printed", "--rollback --state-digest DIGEST", "if it is not, delete it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "run 'fedwarden migrate kubefed --rollback' to put KubeFed back first") {
		t.Errorf("the message %q sends the admin to roll back a state it did not check", msg)
	}
}
