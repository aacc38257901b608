package plan

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
)

// diffContext is the number of unchanged lines shown around each change,
// as fedwarden diff shows them.
const diffContext = 3

// diffText is the unified diff from the live copy to the one that would be
// written, as fedwarden diff shows copies (memberdiff.Compare: the live
// copy pruned to the fields Fedwarden sets, the fields the drift policy
// ignores left out, a Secret's values redacted), but in the direction of
// the change: --- live, +++ planned. "" when they do not differ.
func diffText(in *planInput, cluster string, write, live *unstructured.Unstructured, policy drift.Policy) (string, error) {
	desired := write.DeepCopy()
	annotations := desired.GetAnnotations()
	delete(annotations, typesv1beta1.AnnotationDesiredHash)
	desired.SetAnnotations(annotations)
	location := cluster + "/" + describeKey(desired.GetNamespace(), desired.GetName())
	v, err := memberdiff.Compare(memberdiff.Input{
		Location: location, Desired: desired, Live: live, Policy: policy,
		Versions: memberdiff.Versions{Template: string(in.v.Template), Override: string(in.v.Override)},
		Redact:   memberdiff.IsSecret(in.s.kind.Type.Target),
	})
	if err != nil || !v.Differs() {
		return "", err
	}
	return unified(v.Live, v.Desired, location)
}

// unified returns the unified diff of live to planned as YAML; a nil live
// copy has no lines.
func unified(live, planned map[string]any, location string) (string, error) {
	var a []string
	if live != nil {
		var err error
		if a, err = yamlLines(live); err != nil {
			return "", err
		}
	}
	b, err := yamlLines(planned)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: a, B: b, FromFile: "live " + location, ToFile: "planned " + location, Context: diffContext,
	})
}

// yamlLines returns obj as YAML lines, each ending with a newline.
func yamlLines(obj map[string]any) ([]string, error) {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding as YAML: %w", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines, nil
}
