package clustercache

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// Connection is what the host needs to reach a member: where, whom to trust,
// and the bearer token to present.
type Connection struct {
	// Endpoint is the member API server's https URL.
	Endpoint string
	// CABundle is PEM; empty means the host's system roots.
	CABundle []byte
	// Token is the bearer token of the member's ServiceAccount.
	Token string
}

// key identifies the connection's content, so that a change of endpoint,
// CA or token is noticed without keeping the token in the clear twice.
func (c Connection) key() string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(c.Endpoint), c.CABundle, []byte(c.Token)} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// MalformedError says why a FederatedCluster's connection settings cannot be
// turned into a client. Reason is one of the Reason constants of the
// core.kubefed.io API; Message is meant for the user and never holds
// credential content.
type MalformedError struct {
	Reason  string
	Message string
}

func (e *MalformedError) Error() string { return e.Message }

// Load reads the Secret that fc's spec.secretRef names in namespace and
// returns the connection settings. Settings that cannot work give a
// *MalformedError; a failure to read gives any other error. A Secret that
// is not bound to fc, its endpoint and its CA bundle (the annotations
// AnnotationCredentialsCluster, AnnotationCredentialsEndpoint and
// AnnotationCredentialsCA, which fedwarden join writes) gives a
// *MalformedError with Reason ReasonCredentialsNotBound: its token must not
// be sent, so no Connection holds it.
func Load(ctx context.Context, reader client.Reader, namespace string, fc *corev1beta1.FederatedCluster) (Connection, error) {
	ref := fc.Spec.SecretRef
	if ref == nil {
		return Connection{}, &MalformedError{
			Reason:  corev1beta1.ReasonSecretNotFound,
			Message: "spec.secretRef is not set: a Push cluster needs the name of a Secret holding its token",
		}
	}
	secret := &corev1.Secret{}
	err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, secret)
	if apierrors.IsNotFound(err) {
		return Connection{}, &MalformedError{
			Reason:  corev1beta1.ReasonSecretNotFound,
			Message: fmt.Sprintf("Secret %s/%s named by spec.secretRef does not exist; create it, or join the cluster again with 'fedwarden join %s'", namespace, ref.Name, fc.Name),
		}
	}
	if err != nil {
		return Connection{}, fmt.Errorf("reading Secret %s/%s: %w", namespace, ref.Name, err)
	}
	return connectionFrom(fc, secret)
}

// connectionFrom combines the cluster's spec and its Secret.
func connectionFrom(fc *corev1beta1.FederatedCluster, secret *corev1.Secret) (Connection, error) {
	name := secret.Namespace + "/" + secret.Name
	token := string(secret.Data[corev1beta1.SecretTokenKey])
	if token == "" {
		return Connection{}, &MalformedError{
			Reason:  corev1beta1.ReasonSecretMalformed,
			Message: fmt.Sprintf("Secret %s has no %q key, or it is empty: it must hold the member ServiceAccount's bearer token", name, corev1beta1.SecretTokenKey),
		}
	}
	if !validToken(token) {
		return Connection{}, &MalformedError{
			Reason:  corev1beta1.ReasonSecretMalformed,
			Message: fmt.Sprintf("Secret %s: the value of key %q is not a bearer token (it holds whitespace or control characters; was it base64-encoded twice?)", name, corev1beta1.SecretTokenKey),
		}
	}
	ca, source := fc.Spec.CABundle, "spec.caBundle"
	if len(ca) == 0 {
		ca, source = secret.Data[corev1beta1.SecretCAKey], fmt.Sprintf("key %q of Secret %s", corev1beta1.SecretCAKey, name)
	}
	if len(ca) > 0 {
		if err := CheckCABundle(ca); err != nil {
			return Connection{}, &MalformedError{
				Reason:  corev1beta1.ReasonCABundleMalformed,
				Message: fmt.Sprintf("%s: %v", source, err),
			}
		}
	} else {
		source = "the system roots"
	}
	if err := checkBinding(fc, secret, ca, source); err != nil {
		return Connection{}, err
	}
	return Connection{Endpoint: fc.Spec.APIEndpoint, CABundle: ca, Token: token}, nil
}

// validToken reports whether t can go in an Authorization header as is.
func validToken(t string) bool {
	for _, r := range t {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// CheckCABundle succeeds when pemData holds at least one parsable
// certificate and nothing that is not a certificate: what a FederatedCluster's
// CA bundle must be.
func CheckCABundle(pemData []byte) error {
	found := 0
	for rest := pemData; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a PEM block of type %q, want only CERTIFICATE blocks", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d cannot be parsed: %w", found+1, err)
		}
		found++
	}
	if found == 0 {
		return fmt.Errorf("holds no PEM certificate (it must be PEM, beginning with -----BEGIN CERTIFICATE-----)")
	}
	return nil
}
