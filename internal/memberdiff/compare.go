package memberdiff

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// Versions are the template and override versions the host is at; empty
// when unknown.
type Versions struct {
	Template, Override string
}

// IsSecret tells whether gvk is the core Secret, whose values are
// redacted (scrub.IsSecret).
func IsSecret(gvk schema.GroupVersionKind) bool { return scrub.IsSecret(gvk) }

// Input is what comparing one cluster's copy takes.
type Input struct {
	// Location names the copy in the diff's headers: cluster/namespace/name.
	Location string
	// Desired is the rendered copy, without version annotations.
	Desired *unstructured.Unstructured
	// Live is the member's copy; nil when it has none.
	Live *unstructured.Unstructured
	// Policy is the drift policy in effect in the cluster.
	Policy drift.Policy
	// Versions the host is at.
	Versions Versions
	// Redact replaces the values of a Secret by markers (scrub.RedactDiff).
	Redact bool
}

// Verdict is how one cluster's copy compares.
type Verdict struct {
	// Reasons say why the copy differs; none when it does not.
	Reasons []string
	// Text is the unified diff of a copy that differs.
	Text string
	// Desired and Live are the two sides of that diff as shown: the live
	// copy pruned to the fields the desired one sets, the fields the drift
	// policy ignores left out of both, a Secret's values redacted. Live is
	// nil when the member has no copy; both are nil when the copy does not
	// differ.
	Desired, Live map[string]any
}

// Differs tells whether the copy differs.
func (v Verdict) Differs() bool { return len(v.Reasons) > 0 }

// Compare tells whether in's live copy differs from the desired one, as
// the controller tells drift, and, when it does, makes the diff to show.
func Compare(in Input) (Verdict, error) {
	reasons, err := differences(in)
	if err != nil || len(reasons) == 0 {
		return Verdict{}, err
	}
	shown := withVersions(in.Desired, in.Versions)
	var live map[string]any
	hidden := slices.Clone(in.Policy.IgnorePaths)
	if in.Live != nil {
		live, _ = prune(in.Live.Object, shown.Object, "").(map[string]any)
		// Fields changed by a manager the policy ignores are left out too.
		ignored, err := in.Policy.Hidden(in.Desired, in.Live, propagation.FieldManager)
		if err != nil {
			return Verdict{}, fmt.Errorf("comparing: %w", err)
		}
		hidden = append(hidden, ignored...)
	}
	for _, p := range hidden {
		remove(shown.Object, p)
		remove(live, p)
	}
	if in.Redact {
		scrub.RedactDiff(shown.Object, live)
	}
	text, err := Unified(shown.Object, live, "desired "+in.Location, "live "+in.Location)
	if err != nil {
		return Verdict{}, err
	}
	return Verdict{Reasons: reasons, Text: text, Desired: shown.Object, Live: live}, nil
}

// differences returns why the live copy differs: it is missing, fields the
// desired copy sets were changed by someone else outside the policy's
// ignored paths and managers, or it carries other versions than the host's.
func differences(in Input) ([]string, error) {
	if in.Live == nil {
		return []string{"missing"}, nil
	}
	changes, err := in.Policy.Detect(in.Desired, in.Live, propagation.FieldManager)
	if err != nil {
		return nil, fmt.Errorf("comparing: %w", err)
	}
	var reasons []string
	if len(changes) > 0 {
		paths, managers := drift.Paths(changes)
		reason := "changed " + strings.Join(paths, ", ")
		if len(managers) > 0 {
			reason += " (by " + strings.Join(managers, ", ") + ")"
		}
		reasons = append(reasons, reason)
	}
	annotations := in.Live.GetAnnotations()
	for _, v := range []struct{ what, annotation, want string }{
		{"template", typesv1beta1.AnnotationTemplateVersion, in.Versions.Template},
		{"override", typesv1beta1.AnnotationOverrideVersion, in.Versions.Override},
	} {
		if got := annotations[v.annotation]; v.want != "" && got != v.want {
			reasons = append(reasons, fmt.Sprintf("%s version %s, the host is at %s", v.what, orNone(got), v.want))
		}
	}
	return reasons, nil
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// withVersions returns a copy of desired annotated with the versions the
// host is at, as the controller writes it.
func withVersions(desired *unstructured.Unstructured, v Versions) *unstructured.Unstructured {
	out := desired.DeepCopy()
	annotations := out.GetAnnotations()
	for key, value := range map[string]string{typesv1beta1.AnnotationTemplateVersion: v.Template, typesv1beta1.AnnotationOverrideVersion: v.Override} {
		if value == "" {
			continue
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[key] = value
	}
	if annotations != nil {
		out.SetAnnotations(annotations)
	}
	return out
}

// RetainReplicas keeps the live copy's replicas in desired, as the
// controller does for a resource with spec.retainReplicas.
func RetainReplicas(desired, live *unstructured.Unstructured) {
	if live == nil {
		return
	}
	if replicas, found, _ := unstructured.NestedFieldCopy(live.Object, "spec", "replicas"); found {
		_ = unstructured.SetNestedField(desired.Object, replicas, "spec", "replicas")
	}
}

// prune returns live with only the fields desired sets. Lists of objects
// keep the live items that have a counterpart in desired (same name, else
// same index), in live's order; other lists are kept whole. A value equal
// to desired's, as drift compares values (numbers by value, resource
// quantities by amount), is shown as desired writes it.
func prune(live, desired any, pointer string) any {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live
		}
		out := map[string]any{}
		for k, dv := range d {
			if lv, ok := l[k]; ok {
				out[k] = prune(lv, dv, pointer+"/"+k)
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok || !objects(d) {
			return live
		}
		out := []any{}
		for i, item := range l {
			if j := counterpart(item, i, d); j >= 0 {
				out = append(out, prune(item, d[j], pointer+"/"+strconv.Itoa(j)))
			}
		}
		return out
	}
	if drift.Equal(desired, live, pointer) {
		return desired
	}
	return live
}

// objects tells whether every item of l is an object.
func objects(l []any) bool {
	for _, item := range l {
		if _, ok := item.(map[string]any); !ok {
			return false
		}
	}
	return len(l) > 0
}

// counterpart is the index in desired of the live list's i-th item: the
// item of the same name for objects with a name, else the same index; -1
// when none.
func counterpart(item any, i int, desired []any) int {
	if m, ok := item.(map[string]any); ok {
		if name, ok := m["name"]; ok {
			for j, d := range desired {
				if dm, ok := d.(map[string]any); ok && dm["name"] == name {
					return j
				}
			}
			return -1
		}
	}
	if i < len(desired) {
		return i
	}
	return -1
}

// remove deletes the field a JSON pointer names from obj, if it is there.
func remove(obj map[string]any, pointer string) {
	if obj == nil {
		return
	}
	var tokens []string
	for _, raw := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tokens = append(tokens, strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~"))
	}
	removeTokens(obj, tokens)
}

// removeTokens returns v without the field tokens name.
func removeTokens(v any, tokens []string) any {
	token, last := tokens[0], len(tokens) == 1
	switch c := v.(type) {
	case map[string]any:
		child, ok := c[token]
		switch {
		case !ok:
		case last:
			delete(c, token)
		default:
			c[token] = removeTokens(child, tokens[1:])
		}
		return c
	case []any:
		n, err := strconv.Atoi(token)
		switch {
		case err != nil || n < 0 || n >= len(c):
			return c
		case last:
			return slices.Delete(slices.Clone(c), n, n+1)
		default:
			c[n] = removeTokens(c[n], tokens[1:])
			return c
		}
	}
	return v
}

// Unified returns the unified diff, as YAML, from object from (named
// fromName in the header) to object to; a nil object has no lines.
func Unified(from, to map[string]any, fromName, toName string) (string, error) {
	a, err := yamlLines(from)
	if err != nil {
		return "", err
	}
	b, err := yamlLines(to)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: a, B: b, FromFile: fromName, ToFile: toName, Context: diffContext})
}

// yamlLines returns obj as YAML lines, each ending with a newline; none
// for nil.
func yamlLines(obj map[string]any) ([]string, error) {
	if obj == nil {
		return nil, nil
	}
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
