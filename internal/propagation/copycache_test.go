package propagation

import (
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// desiredWeb is a rendered copy, before stamping.
const desiredWeb = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {kubefed.io/managed: "true", app: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
`

// liveWeb is desiredWeb as the member stores it after Fedwarden applied
// it: defaulted, then its image edited by kubectl, its revision annotated
// and its status written by the member's controllers, and applied once
// with kubectl apply's annotation. Its desired-hash annotation is set by
// the test.
const liveWeb = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 6f1c
  resourceVersion: "42"
  generation: 2
  creationTimestamp: "2026-12-06T20:49:33Z"
  labels: {kubefed.io/managed: "true", app: web}
  annotations:
    deployment.kubernetes.io/revision: "2"
    kubectl.kubernetes.io/last-applied-configuration: '{"a":"large","copy":"of the object"}'
spec:
  replicas: 1
  revisionHistoryLimit: 10
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
  template:
    metadata: {labels: {app: web}}
    spec:
      restartPolicy: Always
      dnsPolicy: ClusterFirst
      containers:
      - name: web
        image: "nginx:edited"
        imagePullPolicy: IfNotPresent
        terminationMessagePath: /dev/termination-log
status:
  observedGeneration: 2
  replicas: 1
  conditions: [{type: Available, status: "False"}]
`

// projectedWeb is liveWeb as the informer keeps it: what some manager
// owns, metadata but its creationTimestamp and kubectl apply's annotation,
// status and spec.replicas.
const projectedWeb = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 6f1c
  resourceVersion: "42"
  generation: 2
  labels: {kubefed.io/managed: "true", app: web}
  annotations:
    deployment.kubernetes.io/revision: "2"
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:edited"}
status:
  observedGeneration: 2
  replicas: 1
  conditions: [{type: Available, status: "False"}]
`

const (
	webByFedwarden = `{"f:metadata":{"f:annotations":{"f:fedwarden.io/owner-uid":{},"f:kubefed.io/desired-hash":{},"f:kubefed.io/override-version":{},"f:kubefed.io/template-version":{}},"f:labels":{"f:app":{},"f:kubefed.io/managed":{}}},"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:name":{}}}}}}}`
	webByKubectl   = `{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`
	webByKCM       = `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`
	webStatus      = `{"f:status":{"f:observedGeneration":{},"f:replicas":{},"f:conditions":{}}}`
)

func webEntries() []metav1.ManagedFieldsEntry {
	e := func(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	return []metav1.ManagedFieldsEntry{
		e(FieldManager, metav1.ManagedFieldsOperationApply, "", webByFedwarden),
		e("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "", webByKubectl),
		e("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "", webByKCM),
		e("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status", webStatus),
	}
}

func fromYAML(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// web returns liveWeb stamped with desiredWeb's hash, its managed fields
// entries.
func web(t *testing.T, entries []metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	t.Helper()
	u := fromYAML(t, liveWeb)
	_ = unstructured.SetNestedField(u.Object, render.ContentHash(fromYAML(t, desiredWeb).Object), "metadata", "annotations", typesv1beta1.AnnotationDesiredHash)
	u.SetManagedFields(entries)
	return u
}

func transformed(t *testing.T, p copyProjection, obj any) *unstructured.Unstructured {
	t.Helper()
	out, err := p.transform(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*unstructured.Unstructured)
}

func TestCopyProjectionKeepsWhatASyncReads(t *testing.T) {
	t.Parallel()
	live := web(t, webEntries())
	got := transformed(t, copyProjection{}, live.DeepCopy())

	want := fromYAML(t, projectedWeb)
	_ = unstructured.SetNestedField(want.Object, live.GetAnnotations()[typesv1beta1.AnnotationDesiredHash], "metadata", "annotations", typesv1beta1.AnnotationDesiredHash)
	all := webEntries()
	want.SetManagedFields([]metav1.ManagedFieldsEntry{all[1], all[2]})
	want.Object[projectedField] = true
	if !reflect.DeepEqual(got.Object, want.Object) {
		gotYAML, _ := yaml.Marshal(got.Object)
		wantYAML, _ := yaml.Marshal(want.Object)
		t.Errorf("projected copy:\n%s\nwant:\n%s", gotYAML, wantYAML)
	}

	again := transformed(t, copyProjection{}, got.DeepCopy())
	if !reflect.DeepEqual(again.Object, got.Object) {
		t.Errorf("a second pass changed the projected copy:\n%v\nto\n%v", got.Object, again.Object)
	}

	// DecideWrite, health and the collected status read of the projection
	// what they read of the whole copy.
	desired, fed := fromYAML(t, desiredWeb), &unstructured.Unstructured{}
	for _, policy := range []drift.Policy{{Remediation: typesv1beta1.RemediationEnforce}, {Remediation: typesv1beta1.RemediationAlert}} {
		fromCache, err := DecideWrite(Copy{Fed: fed, Desired: desired, Live: got, Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		fromWhole, err := DecideWrite(Copy{Fed: fed, Desired: desired, Live: keptWhole(t, live), Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromCache, fromWhole) || fromCache.State != typesv1beta1.ModifiedOutOfBand {
			t.Errorf("%s: DecideWrite on the projection %+v, on the whole copy %+v", policy.Remediation, fromCache, fromWhole)
		}
	}
	health, err := copyhealth.New()
	if err != nil {
		t.Fatal(err)
	}
	if p, w := health.Evaluate(got), health.Evaluate(keptWhole(t, live)); p != w {
		t.Errorf("health of the projection %+v, of the whole copy %+v", p, w)
	}
	deployments := Type{Target: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}
	if p, w := remoteStatus(deployments, got), remoteStatus(deployments, keptWhole(t, live)); !reflect.DeepEqual(p, w) {
		t.Errorf("collected status of the projection %s, of the whole copy %s", p.Raw, w.Raw)
	}
}

// keptWhole is live as the informers kept every copy before they
// projected them: without Fedwarden's and the status subresource's
// managed fields.
func keptWhole(t *testing.T, live *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := keepOthersFields(live.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*unstructured.Unstructured)
}

func TestCopyProjectionKeepsSomeCopiesWhole(t *testing.T) {
	t.Parallel()
	withRules, err := copyhealth.New()
	if err != nil {
		t.Fatal(err)
	}
	rules := []corev1beta1.HealthRule{{Health: corev1beta1.HealthHealthy, When: "object.spec.revisionHistoryLimit == 10"}}
	if err := withRules.SetRules(schema.GroupKind{Group: "apps", Kind: "Deployment"}, rules); err != nil {
		t.Fatal(err)
	}
	unstamped := web(t, webEntries())
	unstructured.RemoveNestedField(unstamped.Object, "metadata", "annotations", typesv1beta1.AnnotationDesiredHash)
	tests := []struct {
		name string
		p    copyProjection
		obj  *unstructured.Unstructured
	}{
		{name: "unstamped, as KubeFed left it", obj: unstamped},
		{name: "no entry of Fedwarden's", obj: web(t, webEntries()[1:])},
		{name: "a kind with spec.healthRules", p: copyProjection{health: withRules}, obj: web(t, webEntries())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := keptWhole(t, tt.obj)
			got := transformed(t, tt.p, tt.obj.DeepCopy())
			if !reflect.DeepEqual(got.Object, want.Object) {
				t.Errorf("got\n%v\nwant the whole copy\n%v", got.Object, want.Object)
			}
			if again := transformed(t, tt.p, got.DeepCopy()); !reflect.DeepEqual(again.Object, got.Object) {
				t.Errorf("a second pass changed the copy:\n%v\nto\n%v", got.Object, again.Object)
			}
		})
	}

	// A copy projected before its kind got spec.healthRules is read from
	// the member.
	projected := transformed(t, copyProjection{}, web(t, webEntries()))
	if (copyProjection{}).partial(projected) || !(copyProjection{health: withRules}).partial(projected) {
		t.Error("partial: want true only for a projected copy of a kind with spec.healthRules")
	}
	if (copyProjection{health: withRules}).partial(keptWhole(t, web(t, webEntries()))) {
		t.Error("partial: true for a copy kept whole")
	}

	tombstone := cache.DeletedFinalStateUnknown{Key: "shop/web"}
	if out, err := (copyProjection{}).transform(tombstone); err != nil || out != tombstone {
		t.Errorf("a tombstone came back as %v, %v", out, err)
	}
}

func TestCopyProjectionKeepsTheLastAppliedConfigurationFedwardenSets(t *testing.T) {
	t.Parallel()
	entries := webEntries()
	entries[0].FieldsV1 = metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)
	got := transformed(t, copyProjection{}, web(t, entries))
	if got.GetAnnotations()[lastApplied] == "" {
		t.Error("the last-applied annotation Fedwarden owns was dropped")
	}
}

// BenchmarkCopyProjection is the transform's cost per copy event: a
// stamped Deployment, projected, against one kept whole (the transform
// before copies were projected).
func BenchmarkCopyProjection(b *testing.B) {
	live := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(liveWeb), &live.Object); err != nil {
		b.Fatal(err)
	}
	desired := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(desiredWeb), &desired.Object); err != nil {
		b.Fatal(err)
	}
	_ = unstructured.SetNestedField(live.Object, render.ContentHash(desired.Object), "metadata", "annotations", typesv1beta1.AnnotationDesiredHash)
	live.SetManagedFields(webEntries())
	for _, bc := range []struct {
		name      string
		transform func(any) (any, error)
	}{{"projected", copyProjection{}.transform}, {"cached", copyProjection{}.cache}, {"whole", keepOthersFields}} {
		b.Run(bc.name, func(b *testing.B) {
			objs := make([]*unstructured.Unstructured, b.N)
			for i := range objs {
				objs[i] = live.DeepCopy()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := bc.transform(objs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bulkCopy is a copy as the bulk benchmark's members hold it (bench/bulk:
// one container, name and image), stamped, with Fedwarden's managed
// fields; NAME is replaced by each copy's number.
const bulkCopy = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"fedwarden.io/owner-uid":"0b7e6f7a-3c1d-4a59-9e7f-6b1f2f0d9c11","fedwarden.io/desired-hash":"9f2c4e1d7a8b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d","fedwarden.io/override-version":"1","fedwarden.io/template-version":"1"},"creationTimestamp":"2026-12-06T20:49:33Z","generation":1,"labels":{"app":"bench","kubefed.io/managed":"true"},"managedFields":[{"manager":"fedwarden","operation":"Apply","apiVersion":"apps/v1","time":"2026-12-06T20:49:33Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:fedwarden.io/owner-uid":{},"f:fedwarden.io/desired-hash":{},"f:fedwarden.io/override-version":{},"f:fedwarden.io/template-version":{}},"f:labels":{"f:app":{},"f:kubefed.io/managed":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}}],"name":"bulk-NAME","namespace":"bench","resourceVersion":"123456","uid":"7c1e2d3f-4a5b-6c7d-8e9f-0a1b2c3dNAME"},"spec":{"progressDeadlineSeconds":600,"replicas":1,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":"bench"}},"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"},"template":{"metadata":{"labels":{"app":"bench"}},"spec":{"containers":[{"image":"nginx:1.27","imagePullPolicy":"IfNotPresent","name":"app","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}},"status":{}}`

// BenchmarkCachedCopySize reports what one cached copy costs in the heap
// after a garbage collection (B/copy): as decoded, kept whole (the
// transform before copies were projected), cut down, and cut down and held
// as the informers hold it (a cachedCopy).
func BenchmarkCachedCopySize(b *testing.B) {
	for _, bc := range []struct {
		name      string
		transform func(any) (any, error)
	}{{"decoded", func(o any) (any, error) { return o, nil }}, {"whole", keepOthersFields}, {"projected", copyProjection{}.transform}, {"cached", copyProjection{}.cache}} {
		b.Run(bc.name, func(b *testing.B) {
			copies := make([]any, b.N)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range b.N {
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON([]byte(strings.ReplaceAll(bulkCopy, "NAME", strconv.Itoa(i)))); err != nil {
					b.Fatal(err)
				}
				out, err := bc.transform(u)
				if err != nil {
					b.Fatal(err)
				}
				copies[i] = out
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "B/copy")
			runtime.KeepAlive(copies)
		})
	}
}
