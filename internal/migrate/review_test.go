package migrate

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
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
				"clientConfig": map[string]any{"service": map[string]any{"namespace": "kube-federation-system", "name": "kubefed-admission-webhook", "path": "/validate"}},
				"rules":        []any{kubefedRule([]any{"CREATE", "UPDATE"}, "kubefedconfigs")}}},
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

// kubefedRule is a rule of KubeFed's webhooks: on resources of
// core.kubefed.io/v1beta1.
func kubefedRule(ops []any, resources ...any) map[string]any {
	return map[string]any{"operations": ops, "apiGroups": []any{"core.kubefed.io"}, "apiVersions": []any{"v1beta1"}, "resources": resources}
}

// kubefedWebhooks are the webhook configurations of KubeFed v0.10.0's
// chart (charts/kubefed/charts/controllermanager/templates/webhook.yaml),
// as a handover saves them from an install in namespace ns.
func kubefedWebhooks(ns string) []map[string]any {
	hook := func(name string, path string, rules ...any) map[string]any {
		return map[string]any{"name": name, "admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "timeoutSeconds": int64(10),
			"clientConfig": map[string]any{"caBundle": "Y2E=", "service": map[string]any{"namespace": ns, "name": "kubefed-admission-webhook", "path": path}},
			"rules":        rules}
	}
	update := []any{"CREATE", "UPDATE"}
	return []map[string]any{{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": "validations.core.kubefed.io"},
		"webhooks": []any{
			hook("federatedtypeconfigs.core.kubefed.io", "/validate-federatedtypeconfigs", kubefedRule(update, "federatedtypeconfigs", "federatedtypeconfigs/status")),
			hook("kubefedclusters.core.kubefed.io", "/validate-kubefedcluster", kubefedRule(update, "kubefedclusters", "kubefedclusters/status")),
			hook("kubefedconfigs.core.kubefed.io", "/validate-kubefedconfig", kubefedRule(update, "kubefedconfigs")),
		},
	}, {
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]any{"name": "mutation.core.kubefed.io"},
		"webhooks": []any{hook("kubefedconfigs.core.kubefed.io", "/default-kubefedconfig", kubefedRule([]any{"CREATE"}, "kubefedconfigs"))},
	}}
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
		{name: "KubeFed's own webhooks", change: func(s *state) { s.Webhooks = kubefedWebhooks("kube-federation-system") }},
		{name: "KubeFed's webhook on pods", change: func(s *state) {
			s.Webhooks = kubefedWebhooks("kube-federation-system")
			setRule(s.Webhooks[1], map[string]any{"operations": []any{"CREATE"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods"}})
		}, want: "MutatingWebhookConfiguration mutation.core.kubefed.io"},
		{name: "KubeFed's webhook on every group", change: func(s *state) {
			setRule(s.Webhooks[0], map[string]any{"operations": []any{"*"}, "apiGroups": []any{"*"}, "apiVersions": []any{"*"}, "resources": []any{"*"}})
		}, want: "ValidatingWebhookConfiguration validations.core.kubefed.io"},
		{name: "KubeFed's webhook on secrets beside its own group", change: func(s *state) {
			setRule(s.Webhooks[0], map[string]any{"operations": []any{"*"}, "apiGroups": []any{"core.kubefed.io", ""}, "apiVersions": []any{"*"}, "resources": []any{"*"}})
		}, want: "ValidatingWebhookConfiguration validations.core.kubefed.io"},
		{name: "KubeFed's webhook on a group named like KubeFed's", change: func(s *state) {
			setRule(s.Webhooks[0], map[string]any{"operations": []any{"*"}, "apiGroups": []any{"evilkubefed.io"}, "apiVersions": []any{"*"}, "resources": []any{"*"}})
		}, want: "ValidatingWebhookConfiguration validations.core.kubefed.io"},
		{name: "KubeFed's webhook hiding its groups under another case", change: func(s *state) {
			rule := map[string]any{"operations": []any{"*"}, "apiGroups": []any{"*"}, "apiVersions": []any{"*"}, "resources": []any{"*"}}
			rule["APIGroups"] = []any{"core.kubefed.io"}
			setRule(s.Webhooks[0], rule)
		}, want: "ValidatingWebhookConfiguration validations.core.kubefed.io"},
		{name: "KubeFed's webhook with rules that cannot be read", change: func(s *state) {
			setRule(s.Webhooks[0], map[string]any{"operations": []any{"*"}, "apiGroups": "*", "apiVersions": []any{"*"}, "resources": []any{"*"}})
		}, want: "ValidatingWebhookConfiguration validations.core.kubefed.io"},
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

// setRule makes rule the only rule of the first webhook of config.
func setRule(config map[string]any, rule map[string]any) {
	config["webhooks"].([]any)[0].(map[string]any)["rules"] = []any{rule}
}

// A KubeFed-named webhook configuration on anything but KubeFed's groups
// is refused naming the webhook and the group.
func TestReviewNamesTheGroupOfARefusedWebhook(t *testing.T) {
	t.Parallel()
	st := kubefedState()
	st.Webhooks = kubefedWebhooks("kube-federation-system")
	setRule(st.Webhooks[1], map[string]any{"operations": []any{"CREATE", "UPDATE"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods", "secrets"}})
	r := review(&savedState{st: st, source: "Secret kube-federation-system/fedwarden-migrate-kubefed", digest: "sha256:x"}, "kube-federation-system")
	err := r.Refusal()
	if err == nil {
		t.Fatal("Refusal() = nil, want the webhook on pods refused")
	}
	for _, want := range []string{"MutatingWebhookConfiguration mutation.core.kubefed.io: its webhook kubefedconfigs.core.kubefed.io matches API group \"\" (the core group", "KubeFed's webhooks match only KubeFed's groups"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Refusal() = %v, want it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "ValidatingWebhookConfiguration") {
		t.Errorf("Refusal() = %v, which refuses KubeFed's own validations", err)
	}
}

// KubeFed's own webhooks pass as the state decodes them, its numbers
// float64, and the dry run says what each calls and is sent.
func TestReviewAcceptsKubeFedsWebhooksAsDecoded(t *testing.T) {
	t.Parallel()
	hooks := kubefedWebhooks("kube-federation-system")
	hooks[1]["webhooks"].([]any)[0].(map[string]any)["clientConfig"].(map[string]any)["service"].(map[string]any)["port"] = 8443
	raw, err := json.Marshal(map[string]any{"webhooks": hooks})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := decodeState("Secret kube-federation-system/fedwarden-migrate-kubefed", gzipped(t, string(raw)), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	r := review(saved, "kube-federation-system")
	if err := r.Refusal(); err != nil {
		t.Fatalf("Refusal() = %v, want KubeFed's own webhooks accepted", err)
	}
	var got []string
	for _, s := range r.Steps {
		got = append(got, s.Action+" "+s.Object+" "+s.Detail)
	}
	for _, want := range []string{
		"restore ValidatingWebhookConfiguration validations.core.kubefed.io calls federatedtypeconfigs.core.kubefed.io: Service kube-federation-system/kubefed-admission-webhook path /validate-federatedtypeconfigs, " +
			"for CREATE,UPDATE of federatedtypeconfigs,federatedtypeconfigs/status in groups core.kubefed.io; kubefedclusters.core.kubefed.io: ",
		"restore MutatingWebhookConfiguration mutation.core.kubefed.io calls kubefedconfigs.core.kubefed.io: Service kube-federation-system/kubefed-admission-webhook port 8443 path /default-kubefedconfig, " +
			"for CREATE of kubefedconfigs in groups core.kubefed.io",
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("steps:\n%s\nwant one starting %q", strings.Join(got, "\n"), want)
		}
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
		"restore ValidatingWebhookConfiguration validations.core.kubefed.io calls kubefedconfigs.core.kubefed.io: Service kube-federation-system/kubefed-admission-webhook path /validate, for CREATE,UPDATE of kubefedconfigs in groups core.kubefed.io",
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
