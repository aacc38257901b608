package registration

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

// secretReader serves one Secret, as the host would.
type secretReader struct{ secret *corev1.Secret }

var _ client.Reader = secretReader{}

func (r secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key != client.ObjectKeyFromObject(r.secret) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	r.secret.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not served")
}

// The objects join writes on the host are bound to each other: the
// controller loads the token for the FederatedCluster join made, and for
// no edit of it that names another endpoint or CA bundle.
func TestHostCredentialsAreBound(t *testing.T) {
	t.Parallel()
	otherCA := selfSignedCA()
	tests := []struct {
		name      string
		spec      func() Spec
		creds     Credentials
		edit      func(*v1beta1.FederatedCluster)
		wantBound bool
	}{
		{name: "as joined", spec: validSpec, creds: Credentials{Token: []byte("tok"), CA: testCA}, wantBound: true},
		{name: "system roots", spec: func() Spec { s := validSpec(); s.CABundle = nil; return s }, creds: Credentials{Token: []byte("tok")}, wantBound: true},
		{name: "CA only in the Secret", spec: func() Spec { s := validSpec(); s.CABundle = nil; return s }, creds: Credentials{Token: []byte("tok"), CA: testCA}, wantBound: true},
		{name: "endpoint edited", spec: validSpec, creds: Credentials{Token: []byte("tok"), CA: testCA},
			edit: func(fc *v1beta1.FederatedCluster) { fc.Spec.APIEndpoint = "https://127.0.0.1:4443" }},
		{name: "CA bundle edited", spec: validSpec, creds: Credentials{Token: []byte("tok"), CA: testCA},
			edit: func(fc *v1beta1.FederatedCluster) { fc.Spec.CABundle = otherCA }},
		{name: "renamed", spec: validSpec, creds: Credentials{Token: []byte("tok"), CA: testCA},
			edit: func(fc *v1beta1.FederatedCluster) { fc.Name = "member-2" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.spec()
			h := NewHost(s, tt.creds)
			if tt.edit != nil {
				tt.edit(h.Cluster)
			}
			conn, err := clustercache.Load(t.Context(), secretReader{h.Credentials}, s.Namespace, h.Cluster)
			var malformed *clustercache.MalformedError
			switch {
			case tt.wantBound && (err != nil || conn.Token != "tok"):
				t.Errorf("Load = %v, want the token", err)
			case !tt.wantBound && (!errors.As(err, &malformed) || malformed.Reason != v1beta1.ReasonCredentialsNotBound):
				t.Errorf("Load = %v, want %s", err, v1beta1.ReasonCredentialsNotBound)
			}
		})
	}
}

func TestCredentialsBinding(t *testing.T) {
	t.Parallel()
	got := CredentialsBinding("east", "https://10.0.0.1:6443", testCA)
	want := map[string]string{
		v1beta1.AnnotationCredentialsCluster:  "east",
		v1beta1.AnnotationCredentialsEndpoint: "https://10.0.0.1:6443",
		v1beta1.AnnotationCredentialsCA:       clustercache.CADigest(testCA),
	}
	if len(got) != len(want) {
		t.Fatalf("CredentialsBinding = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got[k], v)
		}
	}
}
