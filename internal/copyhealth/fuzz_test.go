package copyhealth

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// FuzzEvaluate: any JSON object, given each kind that has built-in rules
// (and a custom kind with spec.healthRules, and one with no rules), never
// makes Evaluate panic or change the object, and always gives one of the
// four healths with a reason and a bounded message, the same on a second
// evaluation. Seeds: testdata's objects, and the malformed ones of the
// checked-in corpus under testdata/fuzz/FuzzEvaluate.
func FuzzEvaluate(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		name := filepath.Base(p)
		b, err := json.Marshal(load(f, name[:len(name)-len(".yaml")]).Object)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	e, err := New()
	if err != nil {
		f.Fatal(err)
	}
	if err := e.SetRules(certificate, certificateRules); err != nil {
		f.Fatal(err)
	}
	kinds := append(BuiltinKinds(), certificate, schema.GroupKind{Kind: "ConfigMap"})
	f.Fuzz(func(t *testing.T, data []byte) {
		obj := map[string]any{}
		if utiljson.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		before := (&unstructured.Unstructured{Object: obj}).DeepCopy().Object
		for _, gk := range kinds {
			got := e.EvaluateKind(gk, obj)
			switch got.Health {
			case corev1beta1.HealthHealthy, corev1beta1.HealthProgressing, corev1beta1.HealthDegraded, corev1beta1.HealthUnknown:
			default:
				t.Fatalf("%s: health %q", gk, got.Health)
			}
			if got.Reason == "" || len(got.Message) > maxMessageLength {
				t.Fatalf("%s: reason %q, message of %d bytes", gk, got.Reason, len(got.Message))
			}
			if again := e.EvaluateKind(gk, obj); again != got {
				t.Fatalf("%s: %+v, then %+v", gk, got, again)
			}
		}
		if !reflect.DeepEqual(obj, before) {
			t.Fatalf("the object changed")
		}
	})
}

// TestFuzzCorpusIsCheckedIn: testdata/fuzz/FuzzEvaluate holds the inputs
// that found bugs (or looked for them) so that go test replays them.
func TestFuzzCorpusIsCheckedIn(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzEvaluate"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no checked-in corpus: %v", err)
	}
}
