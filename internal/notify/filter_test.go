package notify

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func TestParseSinkSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		spec       string
		wantHost   string
		wantFilter Filter
		wantErr    string
	}{
		{name: "URL alone", spec: "https://127.0.0.1:9/a/b?token=t", wantHost: "127.0.0.1:9"},
		{
			name:     "every filter",
			spec:     "http://127.0.0.1:9/x namespace=shop,pay kind=Deployment cluster=eu state=ModifiedOutOfBand,Missing remediation=Alert",
			wantHost: "127.0.0.1:9",
			wantFilter: Filter{
				Namespaces: []string{"shop", "pay"}, Kinds: []string{"Deployment"}, Clusters: []string{"eu"},
				States:       []typesv1beta1.DriftState{typesv1beta1.ModifiedOutOfBand, typesv1beta1.Missing},
				Remediations: []typesv1beta1.Remediation{typesv1beta1.RemediationAlert},
			},
		},
		{name: "a key twice adds", spec: "https://127.0.0.1:9/x kind=Deployment kind=ConfigMap", wantHost: "127.0.0.1:9", wantFilter: Filter{Kinds: []string{"Deployment", "ConfigMap"}}},
		{name: "empty", spec: "  ", wantErr: "empty webhook"},
		{name: "not http", spec: "ftp://127.0.0.1:9/x", wantErr: "http:// or https://"},
		{name: "relative", spec: "/hook", wantErr: "must be absolute"},
		{name: "unknown key", spec: "https://127.0.0.1:9/x colour=red", wantErr: `unknown filter "colour"`},
		{name: "no value", spec: "https://127.0.0.1:9/x kind=", wantErr: "is not key=value"},
		{name: "empty value in a list", spec: "https://127.0.0.1:9/x kind=a,,b", wantErr: "is not key=value"},
		{name: "bad state", spec: "https://127.0.0.1:9/x state=InSync", wantErr: `state "InSync"`},
		{name: "bad remediation", spec: "https://127.0.0.1:9/x remediation=Heal", wantErr: `remediation "Heal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSinkSpec(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one holding %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.URL.Host != tt.wantHost {
				t.Errorf("host %q, want %q", got.URL.Host, tt.wantHost)
			}
			if !filtersEqual(got.Filter, tt.wantFilter) {
				t.Errorf("filter %+v, want %+v", got.Filter, tt.wantFilter)
			}
		})
	}
}

func filtersEqual(a, b Filter) bool {
	return slices.Equal(a.Namespaces, b.Namespaces) && slices.Equal(a.Kinds, b.Kinds) && slices.Equal(a.Clusters, b.Clusters) &&
		slices.Equal(a.States, b.States) && slices.Equal(a.Remediations, b.Remediations)
}

// Errors about a webhook never show its credentials: user info, path or
// query.
func TestSinkSpecErrorsHideCredentials(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{
		"https://user:s3cret@127.0.0.1:9/T0KEN?key=s3cret colour=red",
		"https://user:s3cret@127.0.0.1:9/T0KEN?key=s3cret state=Nope",
		"https://user:s3cret@127.0.0.1:9/T0KEN%zz?key=s3cret",
		"ftp://user:s3cret@127.0.0.1:9/T0KEN",
	} {
		_, err := ParseSinkSpec(spec)
		if err == nil {
			t.Fatalf("%q parsed", spec)
		}
		if msg := err.Error(); strings.Contains(msg, "s3cret") || strings.Contains(msg, "T0KEN") || strings.Contains(msg, "user") {
			t.Errorf("error %q shows a credential", msg)
		}
	}
}

func TestFilterMatches(t *testing.T) {
	t.Parallel()
	tr := Transition{
		Kind: Alerted, Target: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Namespace: "shop", Name: "web", Cluster: "eu", State: typesv1beta1.ModifiedOutOfBand, Remediation: typesv1beta1.RemediationAlert,
	}
	tests := []struct {
		name   string
		filter Filter
		want   bool
	}{
		{"no filter", Filter{}, true},
		{"namespace in the list", Filter{Namespaces: []string{"pay", "shop"}}, true},
		{"another namespace", Filter{Namespaces: []string{"pay"}}, false},
		{"kind in another case", Filter{Kinds: []string{"deployment"}}, true},
		{"another kind", Filter{Kinds: []string{"ConfigMap"}}, false},
		{"another cluster", Filter{Clusters: []string{"us"}}, false},
		{"state", Filter{States: []typesv1beta1.DriftState{typesv1beta1.Missing, typesv1beta1.ModifiedOutOfBand}}, true},
		{"another state", Filter{States: []typesv1beta1.DriftState{typesv1beta1.Missing}}, false},
		{"remediation", Filter{Remediations: []typesv1beta1.Remediation{typesv1beta1.RemediationAlert}}, true},
		{"another remediation", Filter{Remediations: []typesv1beta1.Remediation{typesv1beta1.RemediationEnforce}}, false},
		{"all must match", Filter{Namespaces: []string{"shop"}, Kinds: []string{"Deployment"}, Clusters: []string{"us"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.filter.Matches(tr); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}
