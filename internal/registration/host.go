package registration

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

// Credentials are what the host writes to a member with, copied from the
// member's token Secret.
type Credentials struct {
	// Token is the bearer token of the member's ServiceAccount.
	Token []byte
	// CA is the member's CA bundle, as its token controller publishes it.
	CA []byte
}

// Host holds the objects that tell the host about a member cluster.
type Host struct {
	Namespace   *corev1.Namespace
	Credentials *corev1.Secret
	Cluster     *v1beta1.FederatedCluster
}

// NewHost builds the host objects of s, which must be valid, holding creds.
func NewHost(s Spec, creds Credentials) *Host {
	return &Host{
		Namespace:   namespace(s.Namespace),
		Credentials: credentialsSecret(s, creds),
		Cluster:     federatedCluster(s),
	}
}

// Objects returns the objects in the order they are applied: the Secret
// before the FederatedCluster that names it.
func (h *Host) Objects() []client.Object {
	return []client.Object{h.Namespace, h.Credentials, h.Cluster}
}

func credentialsSecret(s Spec, creds Credentials) *corev1.Secret {
	data := map[string][]byte{v1beta1.SecretTokenKey: creds.Token}
	if len(creds.CA) > 0 {
		data[v1beta1.SecretCAKey] = creds.CA
	}
	// The FederatedCluster verifies the member with spec.caBundle, else
	// with the Secret's ca.crt.
	ca := s.CABundle
	if len(ca) == 0 {
		ca = creds.CA
	}
	meta := objectMeta(s.Name, s.Namespace, CredentialsSecretName(s.Name))
	meta.Annotations = CredentialsBinding(s.Name, s.APIEndpoint, ca)
	return &corev1.Secret{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "Secret"),
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// CredentialsBinding returns the annotations that bind a credentials Secret
// to the FederatedCluster cluster, its spec.apiEndpoint endpoint, and ca,
// the CA bundle it is verified with (its spec.caBundle, else the Secret's
// ca.crt; empty for the system roots). The controller sends the Secret's
// token nowhere else: a credentials Secret made by hand needs them too.
func CredentialsBinding(cluster, endpoint string, ca []byte) map[string]string {
	return map[string]string{
		v1beta1.AnnotationCredentialsCluster:  cluster,
		v1beta1.AnnotationCredentialsEndpoint: endpoint,
		v1beta1.AnnotationCredentialsCA:       clustercache.CADigest(ca),
	}
}

func federatedCluster(s Spec) *v1beta1.FederatedCluster {
	fc := &v1beta1.FederatedCluster{
		TypeMeta:   typeMeta(v1beta1.GroupVersion.String(), "FederatedCluster"),
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: clusterLabels(s)},
		Spec: v1beta1.FederatedClusterSpec{
			APIEndpoint: s.APIEndpoint,
			CABundle:    s.CABundle,
			SyncMode:    s.SyncMode,
			Region:      s.Region,
		},
	}
	if s.SyncMode != v1beta1.SyncModePull {
		// A Pull cluster's agent reaches the host: the host holds no
		// credentials of it.
		fc.Spec.SecretRef = &v1beta1.LocalSecretReference{Name: CredentialsSecretName(s.Name)}
	}
	for _, z := range s.Zones {
		fc.Spec.Zones = append(fc.Spec.Zones, v1beta1.Zone(z))
	}
	return fc
}

// clusterLabels are the FederatedCluster's labels: the user's, the cluster
// name, and the region and zone that selectors match.
func clusterLabels(s Spec) map[string]string {
	l := maps.Clone(s.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, labels(s.Name))
	if s.Region != "" {
		l[v1beta1.LabelRegion] = s.Region
	}
	if len(s.Zones) == 1 {
		l[v1beta1.LabelZone] = s.Zones[0]
	}
	return l
}

// CredentialsOwner returns the apply configuration that makes the
// FederatedCluster cluster the owner of the credentials Secret of s, so
// that the Secret is garbage-collected with it. cluster must have been read
// from the host: its UID is needed.
func CredentialsOwner(s Spec, cluster *v1beta1.FederatedCluster) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: typeMeta(corev1.SchemeGroupVersion.String(), "Secret"),
		ObjectMeta: metav1.ObjectMeta{
			Name:      CredentialsSecretName(s.Name),
			Namespace: s.Namespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1beta1.GroupVersion.String(),
				Kind:       "FederatedCluster",
				Name:       cluster.Name,
				UID:        cluster.UID,
			}},
		},
	}
}
