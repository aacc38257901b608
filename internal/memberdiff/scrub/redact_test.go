package scrub

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// secretDoc is a Secret with data and annotations as YAML.
func secretDoc(t *testing.T, doc string) map[string]any {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestRedactDiff(t *testing.T) {
	t.Parallel()
	const (
		password = "correct-horse"   // 13 bytes
		other    = "correct-horsf"   // 13 bytes, another value
		apiKey   = "AKIA-0123456789" // 15 bytes
	)
	tests := []struct {
		name              string
		desired, live     string
		wantDesired       map[string]string // path -> marker or kept value
		wantLive          map[string]string
		secrets           []string // never in the output, raw or base64
		desiredNil, noLiv bool
	}{
		{
			name:        "same value: same marker on both sides",
			desired:     "data: {password: " + b64(password) + "}",
			live:        "data: {password: " + b64(password) + "}",
			wantDesired: map[string]string{"data/password": "<redacted: 13 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes>"},
			secrets:     []string{password},
		},
		{
			name:        "another value of the same length: the live side differs",
			desired:     "data: {password: " + b64(password) + "}",
			live:        "data: {password: " + b64(other) + "}",
			wantDesired: map[string]string{"data/password": "<redacted: 13 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes, differs>"},
			secrets:     []string{password, other},
		},
		{
			name:        "stringData compared with the data the server keeps",
			desired:     "stringData: {password: " + password + ", key: " + apiKey + "}",
			live:        "data: {password: " + b64(password) + ", key: " + b64(other) + "}",
			wantDesired: map[string]string{"stringData/password": "<redacted: 13 bytes>", "stringData/key": "<redacted: 15 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes>", "data/key": "<redacted: 13 bytes, differs>"},
			secrets:     []string{password, apiKey, other},
		},
		{
			name:        "no live copy",
			desired:     "data: {password: " + b64(password) + "}\nstringData: {key: " + apiKey + "}",
			noLiv:       true,
			wantDesired: map[string]string{"data/password": "<redacted: 13 bytes>", "stringData/key": "<redacted: 15 bytes>"},
			secrets:     []string{password, apiKey},
		},
		{
			name:        "a key only on one side",
			desired:     "data: {password: " + b64(password) + "}",
			live:        "data: {password: " + b64(password) + ", extra: " + b64(apiKey) + "}",
			wantDesired: map[string]string{"data/password": "<redacted: 13 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes>", "data/extra": "<redacted: 15 bytes>"},
			secrets:     []string{password, apiKey},
		},
		{
			name:        "data that is not base64",
			desired:     "data: {password: '" + password + "!'}",
			live:        "data: {password: " + b64(password) + "}",
			wantDesired: map[string]string{"data/password": "<redacted: 14 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes, differs>"},
			secrets:     []string{password},
		},
		{
			name: "last-applied configuration, on both sides",
			desired: `metadata: {annotations: {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"password":"` + b64(password) + `"}}', team: shop}}
data: {password: ` + b64(password) + "}",
			live: `metadata: {annotations: {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"password":"` + b64(other) + `"}}', team: shop}}
data: {password: ` + b64(password) + "}",
			wantDesired: map[string]string{"annotations/kubectl.kubernetes.io/last-applied-configuration": "<redacted: 44 bytes>", "annotations/team": "shop"},
			wantLive:    map[string]string{"annotations/kubectl.kubernetes.io/last-applied-configuration": "<redacted: 44 bytes, differs>", "annotations/team": "shop"},
			secrets:     []string{password, other},
		},
		{
			name:        "last-applied configuration of an empty Secret",
			desired:     `metadata: {annotations: {"kubectl.kubernetes.io/last-applied-configuration": '{"kind":"Secret"}'}}`,
			wantDesired: map[string]string{"annotations/kubectl.kubernetes.io/last-applied-configuration": "<redacted: 17 bytes>"},
			noLiv:       true,
		},
		{
			name:        "another annotation holding a value, raw or base64",
			desired:     "metadata: {annotations: {note: 'was " + password + "', copy: 'x" + b64(apiKey) + "', team: shop}}\ndata: {password: " + b64(password) + ", key: " + b64(apiKey) + "}",
			noLiv:       true,
			wantDesired: map[string]string{"annotations/note": "<redacted: 17 bytes>", "annotations/copy": "<redacted: 21 bytes>", "annotations/team": "shop"},
			secrets:     []string{password, apiKey},
		},
		{
			name:        "a live value found in a desired annotation",
			desired:     "metadata: {annotations: {note: 'now " + other + "'}}\ndata: {password: " + b64(password) + "}",
			live:        "data: {password: " + b64(other) + "}",
			wantDesired: map[string]string{"annotations/note": "<redacted: 17 bytes>"},
			secrets:     []string{other},
		},
		{
			// The API server keeps stringData's value; data's, written
			// too, is looked for all the same.
			name:        "a data value under a stringData key of the same name, found in an annotation",
			desired:     "metadata: {annotations: {note: 'was " + password + "'}}\ndata: {password: " + b64(password) + "}\nstringData: {password: " + apiKey + "}",
			noLiv:       true,
			wantDesired: map[string]string{"annotations/note": "<redacted: 17 bytes>", "data/password": "<redacted: 13 bytes>", "stringData/password": "<redacted: 15 bytes>"},
			secrets:     []string{password, apiKey},
		},
		{
			name:        "values under 4 bytes are not looked for in annotations",
			desired:     "metadata: {annotations: {team: shop-abc}}\ndata: {code: " + b64("abc") + "}",
			noLiv:       true,
			wantDesired: map[string]string{"annotations/team": "shop-abc", "data/code": "<redacted: 3 bytes>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			desired := secretDoc(t, tt.desired)
			var live map[string]any
			if !tt.noLiv {
				live = secretDoc(t, tt.live)
			}
			RedactDiff(desired, live)
			for side, want := range map[string]map[string]string{"desired": tt.wantDesired, "live": tt.wantLive} {
				obj := desired
				if side == "live" {
					obj = live
				}
				for path, w := range want {
					if got := at(obj, path); got != w {
						t.Errorf("%s %s = %q, want %q", side, path, got, w)
					}
				}
			}
			out, err := yaml.Marshal([]any{desired, live})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.secrets {
				if strings.Contains(string(out), s) || strings.Contains(string(out), b64(s)) {
					t.Errorf("the redacted copies hold %q:\n%s", s, out)
				}
			}
		})
	}
}

// at returns the string at path of obj: data/KEY, stringData/KEY or
// annotations/KEY; "<none>" when there is none.
func at(obj map[string]any, path string) string {
	field, key, _ := strings.Cut(path, "/")
	m, _ := obj[field].(map[string]any)
	if field == "annotations" {
		meta, _ := obj["metadata"].(map[string]any)
		m, _ = meta["annotations"].(map[string]any)
	}
	s, ok := m[key].(string)
	if !ok {
		return "<none>"
	}
	return s
}

func TestRedactRevision(t *testing.T) {
	t.Parallel()
	// "hunter22" is aHVudGVyMjI= in base64; "topsecret" dG9wc2VjcmV0.
	var template map[string]any
	var overrides []any
	_ = json.Unmarshal([]byte(`{
		"metadata": {"labels": {"app": "db"}, "annotations": {
			"kubectl.kubernetes.io/last-applied-configuration": "{}", "copy": "pw=hunter22", "b64": "x aHVudGVyMjI= y", "plain": "ok", "short": "pin"}},
		"data": {"password": "aHVudGVyMjI=", "notbase64": "???"},
		"stringData": {"pin": "123"},
		"type": "Opaque"}`), &template)
	_ = json.Unmarshal([]byte(`[{"clusterName": "a", "clusterOverrides": [
		{"path": "/data/password", "value": "dG9wc2VjcmV0"},
		{"path": "/stringData", "value": {"token": "abc"}},
		{"path": "/data", "value": "not a map"},
		{"path": "/metadata/annotations/note", "value": "was topsecret"},
		{"path": "/metadata/annotations", "value": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "other": "fine"}},
		{"path": "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration", "value": "{}"},
		{"path": "/metadata", "value": {"annotations": {"x": "hunter22"}}},
		{"path": "", "value": {"data": {"k": "aHVudGVyMjI="}}},
		{"path": "/metadata/labels/env", "value": "prod"},
		{"op": "remove", "path": "/data/old"}]}]`), &overrides)
	RedactRevision(template, overrides)
	got, _ := json.Marshal(map[string]any{"template": template, "overrides": overrides})
	want := `{"overrides":[{"clusterName":"a","clusterOverrides":[` +
		`{"path":"/data/password","value":"\u003credacted: 9 bytes\u003e"},` +
		`{"path":"/stringData","value":{"token":"\u003credacted: 3 bytes\u003e"}},` +
		`{"path":"/data","value":"\u003credacted: 9 bytes\u003e"},` +
		`{"path":"/metadata/annotations/note","value":"\u003credacted: 13 bytes\u003e"},` +
		`{"path":"/metadata/annotations","value":{"kubectl.kubernetes.io/last-applied-configuration":"\u003credacted: 2 bytes\u003e","other":"fine"}},` +
		`{"path":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration","value":"\u003credacted: 2 bytes\u003e"},` +
		`{"path":"/metadata","value":{"annotations":{"x":"\u003credacted: 8 bytes\u003e"}}},` +
		`{"path":"","value":{"data":{"k":"\u003credacted: 8 bytes\u003e"}}},` +
		`{"path":"/metadata/labels/env","value":"prod"},` +
		`{"op":"remove","path":"/data/old"}]}],` +
		`"template":{"data":{"notbase64":"\u003credacted: 3 bytes\u003e","password":"\u003credacted: 8 bytes\u003e"},` +
		`"metadata":{"annotations":{"b64":"\u003credacted: 16 bytes\u003e","copy":"\u003credacted: 11 bytes\u003e",` +
		`"kubectl.kubernetes.io/last-applied-configuration":"\u003credacted: 2 bytes\u003e","plain":"ok","short":"pin"},"labels":{"app":"db"}},` +
		`"stringData":{"pin":"\u003credacted: 3 bytes\u003e"},"type":"Opaque"}}`
	if string(got) != want {
		t.Errorf("redacted:\n%s\nwant:\n%s", got, want)
	}
	for _, secret := range []string{"hunter22", "aHVudGVyMjI=", "topsecret", "dG9wc2VjcmV0"} {
		if strings.Contains(string(got), secret) {
			t.Errorf("%q left in %s", secret, got)
		}
	}
}

func TestRedactCause(t *testing.T) {
	t.Parallel()
	template := map[string]any{"data": map[string]any{"password": "aHVudGVyMjI="}}
	overrides := []any{map[string]any{"clusterName": "a", "clusterOverrides": []any{map[string]any{"path": "/stringData/token", "value": "topsecret"}}}}
	for cause, want := range map[string]string{
		"kubectl create secret generic db --from-literal=password=hunter22": "<redacted: 65 bytes>",
		"rotated: dG9wc2VjcmV0": "<redacted: 21 bytes>",
		"rotate the token":      "rotate the token",
		"":                      "",
	} {
		if got := RedactCause(cause, template, overrides); got != want {
			t.Errorf("RedactCause(%q) = %q, want %q", cause, got, want)
		}
	}
}
