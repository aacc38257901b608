package dependencies

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var deployment = schema.GroupKind{Group: "apps", Kind: "Deployment"}

func parse(t *testing.T, doc string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// Every place a pod template names a ConfigMap, Secret, ServiceAccount or
// PersistentVolumeClaim is found, each object once with every place, and
// optional only where every place says so; the default ServiceAccount is
// not a dependency.
func TestFind(t *testing.T) {
	t.Parallel()
	obj := parse(t, `
spec:
  template:
    spec:
      serviceAccountName: web
      imagePullSecrets: [{name: registry}]
      volumes:
      - {name: config, configMap: {name: app-config}}
      - {name: tls, secret: {secretName: web-tls}}
      - {name: data, persistentVolumeClaim: {claimName: web-data}}
      - {name: all, projected: {sources: [{configMap: {name: extra, optional: true}}, {secret: {name: web-tls}}, {serviceAccountToken: {path: t}}]}}
      - {name: scratch, emptyDir: {}}
      initContainers:
      - name: migrate
        envFrom: [{secretRef: {name: db}}]
      containers:
      - name: web
        envFrom: [{configMapRef: {name: app-config}}]
        env:
        - {name: PLAIN, value: x}
        - {name: DB_PASSWORD, valueFrom: {secretKeyRef: {name: db, key: password}}}
        - {name: MODE, valueFrom: {configMapKeyRef: {name: extra, key: mode, optional: true}}}
        - {name: FLAG, valueFrom: {configMapKeyRef: {name: flags, key: f, optional: true}}}
`)
	got, err := Find(deployment, obj)
	if err != nil {
		t.Fatal(err)
	}
	want := []Ref{
		{Kind: ConfigMap, Name: "app-config", From: []string{"volume config", "container web envFrom"}},
		{Kind: ConfigMap, Name: "extra", Optional: true, From: []string{"volume all", "container web env MODE"}},
		{Kind: ConfigMap, Name: "flags", Optional: true, From: []string{"container web env FLAG"}},
		{Kind: PersistentVolumeClaim, Name: "web-data", From: []string{"volume data"}},
		{Kind: Secret, Name: "db", From: []string{"init container migrate envFrom", "container web env DB_PASSWORD"}},
		{Kind: Secret, Name: "registry", From: []string{"imagePullSecrets"}},
		{Kind: Secret, Name: "web-tls", From: []string{"volume tls", "volume all"}},
		{Kind: ServiceAccount, Name: "web", From: []string{"serviceAccountName"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find:\n got %+v\nwant %+v", got, want)
	}
}

// An optional reference and a required one of the same object make it
// required.
func TestARequiredReferenceWins(t *testing.T) {
	t.Parallel()
	obj := parse(t, `
spec:
  containers:
  - name: a
    envFrom: [{configMapRef: {name: c, optional: true}}, {configMapRef: {name: c}}]
`)
	got, err := Find(schema.GroupKind{Kind: "Pod"}, obj)
	if err != nil || len(got) != 1 || got[0].Optional {
		t.Errorf("Find = %+v, %v; want c, required", got, err)
	}
}

// The pod spec is found where each kind keeps it; the default
// ServiceAccount, a kind without a pod template and a template without a
// pod spec name nothing.
func TestWhereEachKindKeepsItsPodSpec(t *testing.T) {
	t.Parallel()
	sa := `{serviceAccountName: runner}`
	for _, tt := range []struct {
		gk   schema.GroupKind
		doc  string
		want int
	}{
		{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, `{spec: {template: {spec: ` + sa + `}}}`, 1},
		{schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, `{spec: {template: {spec: ` + sa + `}}}`, 1},
		{schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, `{spec: {template: {spec: ` + sa + `}}}`, 1},
		{schema.GroupKind{Group: "batch", Kind: "Job"}, `{spec: {template: {spec: ` + sa + `}}}`, 1},
		{schema.GroupKind{Group: "batch", Kind: "CronJob"}, `{spec: {jobTemplate: {spec: {template: {spec: ` + sa + `}}}}}`, 1},
		{schema.GroupKind{Kind: "Pod"}, `{spec: ` + sa + `}`, 1},
		{schema.GroupKind{Kind: "Pod"}, `{spec: {serviceAccountName: default}}`, 0},
		{schema.GroupKind{Kind: "ConfigMap"}, `{data: {a: b}}`, 0},
		{deployment, `{spec: {replicas: 1}}`, 0},
	} {
		got, err := Find(tt.gk, parse(t, tt.doc))
		if err != nil || len(got) != tt.want {
			t.Errorf("%s %s: %+v, %v; want %d", tt.gk, tt.doc, got, err, tt.want)
		}
		if HasPodTemplate(tt.gk) == (tt.gk.Kind == "ConfigMap") {
			t.Errorf("HasPodTemplate(%s) = %v", tt.gk, HasPodTemplate(tt.gk))
		}
	}
}

// A template that is not a pod spec is an error naming where.
func TestATemplateThatIsNotAPodSpec(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`{spec: {template: "x"}}`, `{spec: {template: {spec: {volumes: 3}}}}`} {
		if _, err := Find(deployment, parse(t, doc)); err == nil || !strings.Contains(err.Error(), "template") && !strings.Contains(err.Error(), "Deployment") {
			t.Errorf("Find(%s) = %v; want an error saying where", doc, err)
		}
	}
}
