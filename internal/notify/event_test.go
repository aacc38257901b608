package notify

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func sampleTransition() Transition {
	return Transition{
		Kind:      Alerted,
		Federated: schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment"},
		Resource:  "federateddeployments",
		Target:    schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Namespace: "shop", Name: "web", Cluster: "member-1",
		State: typesv1beta1.ModifiedOutOfBand, Paths: []string{"/spec/replicas"}, Managers: []string{"kubectl-edit"},
		TemplateVersion: "3", OverrideVersion: "1", Remediation: typesv1beta1.RemediationAlert,
	}
}

func TestNewEvent(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	console, _ := url.Parse("https://127.0.0.1:9/console/")
	tests := []struct {
		name        string
		transition  func(*Transition)
		console     *url.URL
		wantSource  string
		wantConsole string
	}{
		{name: "namespaced, with a console", console: console,
			wantSource:  "/apis/types.kubefed.io/v1beta1/namespaces/shop/federateddeployments/web",
			wantConsole: "https://127.0.0.1:9/console/resource?cluster=member-1&kind=FederatedDeployment.types.kubefed.io&name=web&namespace=shop"},
		{name: "cluster-scoped, no console", transition: func(t *Transition) {
			t.Namespace, t.Name, t.Resource = "", "admin", "federatedclusterroles"
			t.Federated.Kind = "FederatedClusterRole"
		}, wantSource: "/apis/types.kubefed.io/v1beta1/federatedclusterroles/admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := sampleTransition()
			if tt.transition != nil {
				tt.transition(&tr)
			}
			ev := NewEvent(tr, now, tt.console)
			if ev.SpecVersion != "1.0" || ev.Type != "io.fedwarden.drift.alerted" || ev.Subject != "member-1" || ev.ID == "" ||
				ev.DataContentType != "application/json" || !ev.Time.Equal(now) || ev.Time.Location() != time.UTC {
				t.Errorf("envelope %+v", ev)
			}
			if ev.Source != tt.wantSource {
				t.Errorf("source %q, want %q", ev.Source, tt.wantSource)
			}
			if ev.Data.ConsoleURL != tt.wantConsole {
				t.Errorf("console link %q, want %q", ev.Data.ConsoleURL, tt.wantConsole)
			}
		})
	}
}

// The structured-mode JSON has the CloudEvents attributes at the top and
// the payload under data, and lists are [] rather than null.
func TestEventEncoding(t *testing.T) {
	t.Parallel()
	tr := sampleTransition()
	tr.Paths, tr.Managers = nil, nil
	console, _ := url.Parse("https://127.0.0.1:9/console")
	body, err := NewEvent(tr, time.Unix(0, 0), console).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `/console/resource?cluster=member-1&kind=`) || strings.HasSuffix(string(body), "\n") {
		t.Errorf("body %s: want the console link unescaped, and no newline after the object", body)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"data", "datacontenttype", "id", "source", "specversion", "subject", "time", "type"}
	if !slices.Equal(keys, want) {
		t.Errorf("attributes %v, want %v", keys, want)
	}
	var data map[string]any
	if err := json.Unmarshal(got["data"], &data); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"paths", "managers"} {
		if l, ok := data[k].([]any); !ok || len(l) != 0 {
			t.Errorf("data.%s = %#v, want []", k, data[k])
		}
	}
	if r := data["resource"].(map[string]any); r["kind"] != "Deployment" || r["group"] != "apps" || r["namespace"] != "shop" || r["name"] != "web" {
		t.Errorf("data.resource = %v", r)
	}
}
