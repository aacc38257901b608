package migrate

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// LabelMigratedFrom marks the objects the handover created: its value is
// the federation they were carried over from.
const LabelMigratedFrom = "fedwarden.io/migrated-from"

// migratedFromKubeFed is LabelMigratedFrom's value.
const migratedFromKubeFed = "kubefed"

// clusterMapping is what a KubeFedCluster becomes: a FederatedCluster
// using KubeFed's own Secret, and the annotations that bind that Secret to
// it.
type clusterMapping struct {
	cluster *corev1beta1.FederatedCluster
	// secret is the KubeFed Secret the FederatedCluster uses.
	secret string
	// binding are the Secret's annotations that bind its token.
	binding map[string]string
	// caSource says where the CA bundle comes from, for the plan.
	caSource string
	// ca is the CA bundle that verifies the member: the KubeFedCluster's
	// spec.caBundle, else its Secret's ca.crt; empty for the system roots.
	ca []byte
	// labels counts the KubeFedCluster's labels, which the FederatedCluster
	// keeps.
	labels int
	// rejoin is how the cluster is re-joined with Fedwarden's identity;
	// nil when KubeFed's is kept.
	rejoin *rejoinMapping
}

// mapCluster maps a KubeFedCluster; a cluster Fedwarden cannot reach as
// KubeFed did gives the findings that say why, and no mapping.
func mapCluster(c Cluster) (*clusterMapping, []Finding) {
	subject := "KubeFedCluster " + c.Name
	var blockers []Finding
	block := func(format string, args ...any) {
		blockers = append(blockers, Finding{Subject: subject, Reason: fmt.Sprintf(format, args...)})
	}
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		block("its name is not a DNS-1123 label, which a FederatedCluster's name must be (%s)", strings.Join(errs, "; "))
	}
	endpoint, err := httpsEndpoint(c.APIEndpoint)
	if err != nil {
		block("spec.apiEndpoint %q: %v", c.APIEndpoint, err)
	}
	if len(c.DisabledTLSValidations) > 0 {
		block("spec.disabledTLSValidations %v: Fedwarden never skips TLS verification of a member; give the member a serving certificate "+
			"valid for its endpoint and in date, remove disabledTLSValidations, and run the migration again", c.DisabledTLSValidations)
	}
	if c.ProxyURL != "" {
		block("spec.proxyURL is set: Fedwarden reaches members directly and has no per-cluster proxy")
	}
	switch {
	case c.SecretName == "":
		block("spec.secretRef.name is empty: there is no token to carry over")
	case c.SecretMissing:
		block("its Secret %s does not exist: there is no token to carry over", c.SecretName)
	case !slices.Contains(c.SecretKeys, corev1beta1.SecretTokenKey):
		block("its Secret %s has no %q key: Fedwarden, as KubeFed, presents a bearer token (keys there: %s)",
			c.SecretName, corev1beta1.SecretTokenKey, strings.Join(c.SecretKeys, ", "))
	}
	ca, caSource := c.CABundle, "spec.caBundle"
	if len(ca) == 0 && len(c.secretCA) > 0 {
		ca, caSource = c.secretCA, "key ca.crt of Secret "+c.SecretName
	}
	if len(ca) == 0 {
		caSource = "the system roots"
	} else if err := clustercache.CheckCABundle(ca); err != nil {
		block("%s %v", caSource, err)
	}
	if len(blockers) > 0 {
		return nil, blockers
	}
	return &clusterMapping{
		cluster:  federatedCluster(c, endpoint),
		secret:   c.SecretName,
		binding:  registration.CredentialsBinding(c.Name, endpoint, ca),
		caSource: caSource,
		ca:       ca,
		labels:   len(c.Labels),
	}, nil
}

// httpsEndpoint returns a KubeFedCluster's endpoint as a FederatedCluster
// spells it: an https URL. KubeFed also takes host or host:port, which it
// reaches over https.
func httpsEndpoint(endpoint string) (string, error) {
	if endpoint == "" {
		return "", fmt.Errorf("empty")
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return "", fmt.Errorf("not a URL: %w", err)
	case u.Scheme != "https":
		return "", fmt.Errorf("scheme %s: Fedwarden talks to members over https only", u.Scheme)
	case u.Hostname() == "":
		return "", fmt.Errorf("no host")
	}
	return endpoint, nil
}

// federatedCluster is the FederatedCluster of c, reaching it at endpoint
// with KubeFed's Secret. c's labels come along: KubeFed's clusterSelectors
// matched them, Fedwarden's match the FederatedCluster's.
func federatedCluster(c Cluster, endpoint string) *corev1beta1.FederatedCluster {
	labels := maps.Clone(c.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[corev1beta1.LabelCluster] = c.Name
	labels[LabelMigratedFrom] = migratedFromKubeFed
	return &corev1beta1.FederatedCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1beta1.GroupVersion.String(), Kind: "FederatedCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: labels},
		Spec: corev1beta1.FederatedClusterSpec{
			APIEndpoint: endpoint,
			CABundle:    c.CABundle,
			SecretRef:   &corev1beta1.LocalSecretReference{Name: c.SecretName},
			SyncMode:    corev1beta1.SyncModePush,
		},
	}
}
