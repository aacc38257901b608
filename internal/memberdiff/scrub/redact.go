package scrub

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// The redaction of a Secret's values in the objects Fedwarden prints: the
// desired and live copies `fedwarden diff`, `fedwarden plan` and the
// console show (RedactDiff), and a revision `fedwarden rollout history`
// shows (RedactRevision, RedactCause). One rule for all:
//
//   - each value of data and stringData becomes <redacted: N bytes>, N its
//     decoded length (Decode); keys stay;
//   - so do the annotation kubectl.kubernetes.io/last-applied-configuration,
//     whatever it holds, and any other annotation that holds one of the
//     values, raw or base64, of MinLength bytes or more;
//   - on the live side of a diff, the marker of a value or annotation that
//     is not the desired one says so: <redacted: N bytes, differs>. Equal
//     values get equal markers, so a diff shows which keys changed and
//     nothing of what they hold;
//   - a revision's overrides of paths in data, stringData or the
//     annotations are redacted the same way, and its change cause when it
//     holds a value (`kubectl create secret --from-literal=... --record`
//     writes them there).

// lastApplied is the annotation `kubectl apply` keeps the applied object
// in: on a Secret, its data.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// counterpart is what a redacted copy is compared with: the desired copy,
// for the live side of a diff. A value or annotation that differs from its
// counterpart's gets a marker that says so. The zero counterpart (the
// desired side's, a revision's) has none, and no marker says "differs".
type counterpart struct {
	values      map[string][]byte
	annotations map[string]string
}

// RedactDiff replaces, in the desired and live copies of a Secret as a
// diff shows them (both changed in place), every value of the Secret by a
// marker (see above), the live side's saying whether it differs from the
// desired one. live may be nil.
func RedactDiff(desired, live map[string]any) {
	embedded := embeddedForms(append(objectValues(desired), objectValues(live)...))
	want := counterpart{values: secretValues(desired), annotations: stringAnnotations(desired)}
	redactObject(desired, embedded, counterpart{})
	redactObject(live, embedded, want)
}

// RedactRevision replaces, in a revision of a Secret's template and
// overrides (both changed in place), every value of the Secret by a
// marker (see above).
func RedactRevision(template map[string]any, overrides []any) {
	embedded := revisionEmbedded(template, overrides)
	redactObject(template, embedded, counterpart{})
	eachOverride(overrides, func(o map[string]any) {
		if v, ok := o["value"]; ok {
			o["value"] = redactOverride(fmt.Sprint(o["path"]), v, embedded)
		}
	})
}

// RedactCause returns the change cause of a Secret's revision, replaced by
// a marker when it holds one of the revision's values.
func RedactCause(cause string, template map[string]any, overrides []any) string {
	if holdsAny(cause, revisionEmbedded(template, overrides)) {
		return marker(len(cause), false)
	}
	return cause
}

// revisionEmbedded are the values of a Secret's revision, template and
// overrides, in the forms they are looked for in (embeddedForms).
func revisionEmbedded(template map[string]any, overrides []any) []string {
	values := objectValues(template)
	eachOverride(overrides, func(o map[string]any) {
		values = append(values, overrideValues(fmt.Sprint(o["path"]), o["value"])...)
	})
	return embeddedForms(values)
}

// embeddedForms are the values looked for in annotations and change
// causes, in every form a Secret shows them in: raw and base64. Values
// shorter than MinLength are left out: any text holds one by chance.
func embeddedForms(values [][]byte) []string {
	var forms []string
	for _, v := range values {
		if len(v) >= MinLength {
			forms = append(forms, string(v), base64.StdEncoding.EncodeToString(v))
		}
	}
	return forms
}

// holdsAny tells whether s holds one of values.
func holdsAny(s string, values []string) bool {
	return slices.ContainsFunc(values, func(v string) bool { return strings.Contains(s, v) })
}

// objectValues returns every value of a Secret object (or template),
// decoded; none for a nil one.
func objectValues(obj map[string]any) [][]byte {
	var out [][]byte
	for _, field := range Fields {
		m, _ := obj[field].(map[string]any)
		for _, v := range m {
			out = append(out, Decode(field, v))
		}
	}
	return out
}

// secretValues returns a Secret's values by key, as the API server stores
// them: data decoded, with stringData over it. nil for a nil Secret.
func secretValues(obj map[string]any) map[string][]byte {
	if obj == nil {
		return nil
	}
	out := map[string][]byte{}
	for _, field := range Fields {
		m, _ := obj[field].(map[string]any)
		for key, v := range m {
			out[key] = Decode(field, v)
		}
	}
	return out
}

// stringAnnotations returns a copy of the annotations of obj.
func stringAnnotations(obj map[string]any) map[string]string {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	out := make(map[string]string, len(ann))
	for k, v := range ann {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// eachOverride calls f with each override (op, path, value) of overrides,
// the spec.overrides of a federated resource.
func eachOverride(overrides []any, f func(map[string]any)) {
	for _, co := range overrides {
		m, _ := co.(map[string]any)
		list, _ := m["clusterOverrides"].([]any)
		for _, o := range list {
			if om, ok := o.(map[string]any); ok {
				f(om)
			}
		}
	}
}

// overrideValues returns the values of a Secret an override of path sets.
func overrideValues(path string, value any) [][]byte {
	switch field, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/"); {
	case path == "" || path == "/":
		obj, _ := value.(map[string]any)
		return objectValues(obj)
	case slices.Contains(Fields, field) && rest == "":
		return objectValues(map[string]any{field: value})
	case slices.Contains(Fields, field):
		return [][]byte{Decode(field, value)}
	}
	return nil
}

// redactObject redacts a Secret object (or template) in place; nil is
// left as it is.
func redactObject(obj map[string]any, embedded []string, other counterpart) {
	if obj == nil {
		return
	}
	for _, field := range Fields {
		m, _ := obj[field].(map[string]any)
		for key, v := range m {
			value := Decode(field, v)
			o, ok := other.values[key]
			m[key] = marker(len(value), ok && !bytes.Equal(value, o))
		}
	}
	meta, _ := obj["metadata"].(map[string]any)
	redactAnnotations(meta, embedded, other.annotations)
}

// redactAnnotations redacts, in metadata meta, the last-applied
// configuration and every annotation that holds one of the embedded
// values; other are the counterpart's annotations.
func redactAnnotations(meta map[string]any, embedded []string, other map[string]string) {
	ann, _ := meta["annotations"].(map[string]any)
	for key, v := range ann {
		ann[key] = redactAnnotation(key, v, embedded, other)
	}
}

// redactAnnotation returns the value v of annotation key, redacted when it
// is the last-applied configuration or holds one of the embedded values.
func redactAnnotation(key string, v any, embedded []string, other map[string]string) any {
	s := fmt.Sprint(v)
	if key != lastApplied && !holdsAny(s, embedded) {
		return v
	}
	o, ok := other[key]
	return marker(len(s), ok && o != s)
}

// redactOverride returns the value of an override of path, redacted.
func redactOverride(path string, value any, embedded []string) any {
	field, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch {
	case path == "" || path == "/":
		obj, ok := value.(map[string]any)
		if !ok {
			return marker(len(fmt.Sprint(value)), false)
		}
		redactObject(obj, embedded, counterpart{})
	case slices.Contains(Fields, field) && rest == "":
		m, ok := value.(map[string]any)
		if !ok {
			return marker(len(fmt.Sprint(value)), false)
		}
		redactObject(map[string]any{field: m}, embedded, counterpart{})
	case slices.Contains(Fields, field):
		return marker(len(Decode(field, value)), false)
	case field == "metadata" && rest == "":
		meta, _ := value.(map[string]any)
		redactAnnotations(meta, embedded, nil)
	case field == "metadata" && rest == "annotations":
		redactAnnotations(map[string]any{"annotations": value}, embedded, nil)
	case field == "metadata" && strings.HasPrefix(rest, "annotations/"):
		return redactAnnotation(unescapePointer(strings.TrimPrefix(rest, "annotations/")), value, embedded, nil)
	}
	return value
}

// unescapePointer unescapes a JSON pointer token (RFC 6901).
func unescapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}

// marker stands for a redacted value of n bytes; on the live side of a
// diff, differs says that it is not the desired value.
func marker(n int, differs bool) string {
	if differs {
		return fmt.Sprintf("<redacted: %d bytes, differs>", n)
	}
	return fmt.Sprintf("<redacted: %d bytes>", n)
}
