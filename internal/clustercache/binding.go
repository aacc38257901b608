package clustercache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// CADigest returns what the annotation AnnotationCredentialsCA of a
// credentials Secret holds for the CA bundle ca: "sha256:" and the hex
// SHA-256 of its bytes, or CredentialsCASystemRoots when it is empty.
func CADigest(ca []byte) string {
	if len(ca) == 0 {
		return corev1beta1.CredentialsCASystemRoots
	}
	sum := sha256.Sum256(ca)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// bindingKeys are the annotations that bind a credentials Secret, in the
// order messages name them.
var bindingKeys = []string{
	corev1beta1.AnnotationCredentialsCluster,
	corev1beta1.AnnotationCredentialsEndpoint,
	corev1beta1.AnnotationCredentialsCA,
}

// checkBinding succeeds when secret is bound to fc: to its name, its
// spec.apiEndpoint and ca, the CA bundle the endpoint is verified with
// (read from caSource). Otherwise the token must not be sent, and the
// *MalformedError says why and what to do. Whoever may edit fc but not
// Secrets cannot change the binding, so cannot send the token elsewhere.
func checkBinding(fc *corev1beta1.FederatedCluster, secret *corev1.Secret, ca []byte, caSource string) error {
	name := secret.Namespace + "/" + secret.Name
	notBound := func(format string, args ...any) error {
		return &MalformedError{Reason: corev1beta1.ReasonCredentialsNotBound, Message: fmt.Sprintf(format, args...)}
	}
	var missing []string
	for _, key := range bindingKeys {
		if secret.Annotations[key] == "" {
			missing = append(missing, key)
		}
	}
	switch {
	case len(missing) == len(bindingKeys):
		return notBound("Secret %s is not bound to a cluster, so its token is not sent: Fedwarden sends a token only to the cluster, "+
			"endpoint and CA bundle that its Secret names in the annotations %s (Secrets written by a fedwarden join older than this check have none); "+
			"run 'fedwarden join %s' again to bind it", name, strings.Join(bindingKeys, ", "), fc.Name)
	case len(missing) > 0:
		return notBound("Secret %s lacks the annotations %s that bind its token to a cluster, endpoint and CA bundle, so its token is not sent; "+
			"run 'fedwarden join %s' again to bind it", name, strings.Join(missing, ", "), fc.Name)
	}
	a := secret.Annotations
	cluster, endpoint, digest := a[corev1beta1.AnnotationCredentialsCluster], a[corev1beta1.AnnotationCredentialsEndpoint], a[corev1beta1.AnnotationCredentialsCA]
	switch {
	case cluster != fc.Name:
		return notBound("Secret %s holds the credentials of cluster %s, not of %s, so its token is not sent: "+
			"set spec.secretRef to the Secret of %s (fedwarden join names it fedwarden-%s-credentials), or run 'fedwarden join %s' again",
			name, cluster, fc.Name, fc.Name, fc.Name, fc.Name)
	case endpoint != fc.Spec.APIEndpoint:
		return notBound("Secret %s binds its token to the endpoint %s, not to spec.apiEndpoint %s, so it is not sent there: "+
			"if the cluster moved, run 'fedwarden join %s' again, or have someone who may write Secrets set the Secret's annotation %s to the new endpoint",
			name, endpoint, fc.Spec.APIEndpoint, fc.Name, corev1beta1.AnnotationCredentialsEndpoint)
	case digest != CADigest(ca):
		return notBound("Secret %s binds its token to the CA bundle %s, but the endpoint would be verified with %s (%s), so the token is not sent: "+
			"if the member's CA changed, run 'fedwarden join %s' again, or have someone who may write Secrets set the Secret's annotation %s to %s",
			name, digest, caSource, CADigest(ca), fc.Name, corev1beta1.AnnotationCredentialsCA, CADigest(ca))
	}
	return nil
}
