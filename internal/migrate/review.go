package migrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// errRefused: the state holds an object that no handover saves, or is
// not the one whose digest the admin gave.
var errRefused = errors.New("rollback refused")

// RollbackReview is what Rollback would do with the state it finds: each
// object it would restore, and each it refuses. Rollback writes nothing
// unless nothing is refused and the admin gives the state's digest.
type RollbackReview struct {
	// Source names the object holding the state: Secret StateSecret, or
	// an earlier Fedwarden's ConfigMap LegacyStateConfigMap.
	Source string `json:"source"`
	// Legacy is set for LegacyStateConfigMap, which anyone who may write
	// ConfigMaps in the namespace may have written.
	Legacy bool `json:"legacy,omitempty"`
	// Digest is the digest of the state: the one the handover printed if
	// the state is that handover's.
	Digest string `json:"digest"`
	// Steps are what Rollback does, in order.
	Steps []Step `json:"steps"`
	// Refused are the objects of the state that no handover saves: with
	// any, Rollback restores nothing.
	Refused []Finding `json:"refused,omitempty"`

	saved *savedState
}

// ReviewRollback reads the state saved in namespace and says what
// Rollback would do with it. It writes nothing.
func (h *Host) ReviewRollback(ctx context.Context, namespace string) (*RollbackReview, error) {
	c, err := h.NewClient()
	if err != nil {
		return nil, err
	}
	saved, err := loadState(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	if saved == nil {
		return nil, fmt.Errorf("%w: neither %s, where the handover saves what it changes, nor %s, where an earlier Fedwarden saved it, exists",
			errNothingToRollBack, stateSecretName(namespace), legacyStateName(namespace))
	}
	return review(saved, namespace), nil
}

// review judges each object of a saved state, and lists what Rollback
// does with it.
func review(saved *savedState, namespace string) *RollbackReview {
	r := &RollbackReview{Source: saved.source, Legacy: saved.legacy, Digest: saved.digest, saved: saved}
	st := saved.st
	refuse := func(m map[string]any, reason string) {
		r.Refused = append(r.Refused, Finding{Subject: objectName(m), Reason: reason})
	}
	if savedCRDScope(st, typeConfigCRD) == string(apiextensionsv1.NamespaceScoped) {
		r.add("delete", "CustomResourceDefinition "+typeConfigCRD, "Fedwarden's, cluster-scoped, with its FederatedTypeConfigs (their finalizers removed), when it is in place")
	}
	for _, m := range st.CRDs {
		if reason := refuseCRD(m); reason != "" {
			refuse(m, reason)
			continue
		}
		r.add("restore", objectName(m), "KubeFed's, in place of Fedwarden's of that name: every object of it is kept")
	}
	for _, m := range st.TypeConfigs {
		if reason := refuseTypeConfig(m, namespace); reason != "" {
			refuse(m, reason)
			continue
		}
		r.add("restore", objectName(m), "")
	}
	for _, m := range st.Webhooks {
		if reason := refuseWebhook(m, namespace); reason != "" {
			refuse(m, reason)
			continue
		}
		r.add("restore", objectName(m), "calls "+webhookEndpoints(m))
	}
	if st.Replicas != nil {
		r.add("scale", "Deployment "+namespace+"/"+ControllerDeployment, fmt.Sprintf("back to %d replicas", *st.Replicas))
	}
	for _, name := range st.Rejoined {
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			r.Refused = append(r.Refused, Finding{Subject: "re-joined cluster " + printable(name), Reason: "not a cluster name (" + strings.Join(errs, "; ") + ")"})
			continue
		}
		r.add("leave", "Fedwarden's identity in cluster "+name, "and its credentials Secret on the host: remove them with 'fedwarden unjoin "+name+"'")
	}
	r.add("delete", saved.source, "the state, once KubeFed is back")
	return r
}

func (r *RollbackReview) add(action, object, detail string) {
	r.Steps = append(r.Steps, Step{Action: action, Object: object, Detail: detail})
}

// Refusal returns the error of a state that holds objects no handover
// saves, naming each; nil when it holds none.
func (r *RollbackReview) Refusal() error {
	if len(r.Refused) == 0 {
		return nil
	}
	names := make([]string, 0, len(r.Refused))
	for _, f := range r.Refused {
		names = append(names, f.String())
	}
	hint := "delete it: no handover wrote it as it is"
	if r.Legacy {
		hint = "delete it: anyone who may write ConfigMaps in its namespace may have written it, and no handover wrote it as it is"
	}
	return fmt.Errorf("%w: %s holds %d object(s) that no handover saves, so nothing was restored: %s; %s",
		errRefused, r.Source, len(r.Refused), strings.Join(names, "; "), hint)
}

// CheckDigest fails unless want is the state's digest: the one the
// handover printed.
func (r *RollbackReview) CheckDigest(want string) error {
	if want == "" {
		return fmt.Errorf("%w: --state-digest is missing: give the digest the handover printed, so that --rollback restores the state that handover saved "+
			"and nothing that was written in its place; nothing was restored. "+
			"If you lost it, 'fedwarden migrate kubefed --rollback --dry-run' lists every object of %s and prints its digest: pass that digest only once you have checked each object",
			errRefused, r.Source)
	}
	if want != r.Digest {
		return fmt.Errorf("%w: %s has digest %s, not %s: it is not the state that handover saved, or it changed since; nothing was restored. "+
			"'fedwarden migrate kubefed --rollback --dry-run' lists what it holds", errRefused, r.Source, r.Digest, want)
	}
	return nil
}

// objectName names a saved object as Kind name, or Kind namespace/name.
func objectName(m map[string]any) string {
	u := unstructured.Unstructured{Object: m}
	kind := u.GetKind()
	if kind == "" {
		kind = "object of no kind"
	}
	name := u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return printable(kind) + " " + printable(name)
}

// printable returns s, quoted if it holds anything a terminal would not
// print as it is: a saved object's name is whatever its writer chose.
func printable(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// isKubeFedGroup tells whether group is one of KubeFed's API groups:
// kubefed.io and its subdomains.
func isKubeFedGroup(group string) bool {
	return group == "kubefed.io" || strings.HasSuffix(group, ".kubefed.io")
}

// refuseWebhook says why m is not one of KubeFed's webhook
// configurations of the control plane in namespace; "" when it is.
func refuseWebhook(m map[string]any, namespace string) string {
	u := unstructured.Unstructured{Object: m}
	kind := u.GetKind()
	if u.GetAPIVersion() != admissionregistrationv1.SchemeGroupVersion.String() || (kind != "ValidatingWebhookConfiguration" && kind != "MutatingWebhookConfiguration") {
		return "saved as a webhook configuration, where a handover saves only ValidatingWebhookConfigurations and MutatingWebhookConfigurations (admissionregistration.k8s.io/v1)"
	}
	if !isKubeFedWebhook(u.GetName(), namespace) {
		return fmt.Sprintf("not one of KubeFed's webhook configurations, which are named %s, or those names followed by -%s",
			strings.Join(webhookPrefixes, " and "), namespace)
	}
	hooks, err := savedWebhooks(m)
	if err != nil {
		return err.Error()
	}
	for _, h := range hooks {
		for _, rule := range h.Rules {
			for _, g := range rule.APIGroups {
				if !isKubeFedGroup(g) {
					return fmt.Sprintf("its webhook %s matches API group %s: KubeFed's webhooks match only KubeFed's groups (kubefed.io and its subdomains), "+
						"and a webhook restored with your rights would be sent, or could change, every object of that group it matches",
						printable(h.Name), groupName(g))
				}
			}
		}
	}
	return ""
}

// groupName names an API group in a refusal: "" and * by what they match.
func groupName(g string) string {
	switch g {
	case "":
		return `"" (the core group: pods, secrets, ...)`
	case "*":
		return "* (every group)"
	}
	return printable(g)
}

// savedWebhook is what the review reads of a webhook of a saved
// configuration: its name, what it calls and which requests it is sent.
type savedWebhook struct {
	Name         string `json:"name"`
	ClientConfig struct {
		URL     *string                                   `json:"url,omitempty"`
		Service *admissionregistrationv1.ServiceReference `json:"service,omitempty"`
	} `json:"clientConfig"`
	Rules []admissionregistrationv1.RuleWithOperations `json:"rules,omitempty"`
}

// savedWebhooks reads the webhooks of a saved configuration by their
// fields' exact names, as the API server reads them, so that no field
// the server would read is hidden from the review under another case.
func savedWebhooks(m map[string]any) ([]savedWebhook, error) {
	var c struct {
		Webhooks []savedWebhook `json:"webhooks,omitempty"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
		return nil, fmt.Errorf("its webhooks cannot be read as a webhook configuration's: %w", err)
	}
	return c.Webhooks, nil
}

// refuseCRD says why m is not a CRD of KubeFed's groups as a handover
// saves it; "" when it is.
func refuseCRD(m map[string]any) string {
	u := unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() != apiextensionsv1.SchemeGroupVersion.String() || u.GetKind() != "CustomResourceDefinition" {
		return "saved as a CRD, where a handover saves only CustomResourceDefinitions (apiextensions.k8s.io/v1)"
	}
	crd, err := crdFrom(m)
	if err != nil {
		return err.Error()
	}
	if !isKubeFedGroup(crd.Spec.Group) {
		return fmt.Sprintf("its group %s is not one of KubeFed's (kubefed.io and its subdomains), whose CRDs are the only ones a handover replaces", printable(crd.Spec.Group))
	}
	if crd.Name != crd.Spec.Names.Plural+"."+crd.Spec.Group {
		return "its name is not its plural and group, as a CustomResourceDefinition's is"
	}
	if conv := crd.Spec.Conversion; conv != nil && conv.Strategy != "" && conv.Strategy != apiextensionsv1.NoneConverter {
		return fmt.Sprintf("it converts its objects with strategy %s, which calls a webhook: KubeFed's CRDs have none", printable(string(conv.Strategy)))
	}
	return ""
}

// refuseTypeConfig says why m is not one of KubeFed's FederatedTypeConfigs
// of namespace; "" when it is.
func refuseTypeConfig(m map[string]any, namespace string) string {
	u := unstructured.Unstructured{Object: m}
	if u.GroupVersionKind() != typeConfigGVK {
		return "saved as a FederatedTypeConfig, where a handover saves only FederatedTypeConfigs of " + typeConfigGVK.GroupVersion().String()
	}
	if u.GetNamespace() != namespace {
		return "not in KubeFed's namespace " + namespace + ", the only one whose FederatedTypeConfigs a handover saves"
	}
	return ""
}

// webhookEndpoints says what each webhook of a saved configuration calls,
// and which requests it is sent: what to check before restoring it,
// since it is sent what it matches.
func webhookEndpoints(m map[string]any) string {
	hooks, err := savedWebhooks(m)
	if err != nil {
		return "webhooks that cannot be read"
	}
	var out []string
	for _, h := range hooks {
		out = append(out, printable(h.Name)+": "+webhookTarget(h)+", for "+webhookRules(h.Rules))
	}
	if len(out) == 0 {
		return "no webhook"
	}
	return strings.Join(out, "; ")
}

// webhookTarget names the URL or the Service a webhook calls.
func webhookTarget(h savedWebhook) string {
	if url := h.ClientConfig.URL; url != nil && *url != "" {
		return "URL " + printable(*url)
	}
	svc := h.ClientConfig.Service
	if svc == nil {
		return "nothing"
	}
	target := "Service " + printable(svc.Namespace+"/"+svc.Name)
	if svc.Port != nil {
		target += fmt.Sprintf(" port %d", *svc.Port)
	}
	if svc.Path != nil && *svc.Path != "" {
		target += " path " + printable(*svc.Path)
	}
	return target
}

// webhookRules says which requests a webhook is sent: for each rule, its
// operations, API groups and resources.
func webhookRules(rules []admissionregistrationv1.RuleWithOperations) string {
	if len(rules) == 0 {
		return "no request"
	}
	list := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = printable(s)
		}
		return strings.Join(out, ",")
	}
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		ops := make([]string, len(r.Operations))
		for i, op := range r.Operations {
			ops[i] = string(op)
		}
		out = append(out, fmt.Sprintf("%s of %s in groups %s", list(ops), list(r.Resources), list(r.APIGroups)))
	}
	return strings.Join(out, " and ")
}
