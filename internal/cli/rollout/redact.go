package rollout

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
)

// The redaction of a Secret's values in a revision, as `fedwarden diff`
// redacts them (internal/memberdiff, which reads the values, as this does,
// with package scrub's Decode and Fields): each value
// of data and stringData becomes <redacted: N bytes>, N its decoded length,
// and so do the annotation kubectl.kubernetes.io/last-applied-configuration
// and any other annotation that holds one of the values (raw or base64, of
// minEmbedded bytes or more). A revision has overrides too: their values
// for paths in data, stringData or the annotations are redacted the same
// way. Keys stay visible.

// lastApplied is the annotation `kubectl apply` keeps the applied object
// in: on a Secret, its data.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// minEmbedded is the length under which a value is not looked for in
// annotations: any text holds so short a value by chance.
const minEmbedded = scrub.MinLength

// secretFields are the fields of a Secret that hold its values.
var secretFields = scrub.Fields

// redactRevision replaces, in a revision of a Secret's template and
// overrides (both changed in place), every value of the Secret by a
// marker.
func redactRevision(template map[string]any, overrides []any) {
	embedded := embeddedValues(template, overrides)
	redactObject(template, embedded)
	eachOverride(overrides, func(o map[string]any) {
		if v, ok := o["value"]; ok {
			o["value"] = redactOverride(fmt.Sprint(o["path"]), v, embedded)
		}
	})
}

// embeddedValues are the values of a Secret's revision that are looked
// for in its annotations and change cause, in every form a Secret shows
// them in: raw and base64.
func embeddedValues(template map[string]any, overrides []any) []string {
	values := objectValues(template)
	eachOverride(overrides, func(o map[string]any) {
		values = append(values, overrideValues(fmt.Sprint(o["path"]), o["value"])...)
	})
	var embedded []string
	for _, v := range values {
		if len(v) >= minEmbedded {
			embedded = append(embedded, string(v), base64.StdEncoding.EncodeToString(v))
		}
	}
	return embedded
}

// redactCause returns the change cause of a Secret's revision, redacted
// when it holds one of its values: `kubectl create secret
// --from-literal=... --record` writes them there.
func redactCause(cause string, template map[string]any, overrides []any) string {
	if holdsAny(cause, embeddedValues(template, overrides)) {
		return marker(len(cause))
	}
	return cause
}

// holdsAny tells whether s holds one of values.
func holdsAny(s string, values []string) bool {
	return slices.ContainsFunc(values, func(v string) bool { return strings.Contains(s, v) })
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

// objectValues returns the values of a Secret object (or template), decoded.
func objectValues(obj map[string]any) [][]byte {
	var out [][]byte
	for _, field := range secretFields {
		m, _ := obj[field].(map[string]any)
		for _, v := range m {
			out = append(out, decode(field, v))
		}
	}
	return out
}

// overrideValues returns the values of a Secret an override of path sets.
func overrideValues(path string, value any) [][]byte {
	switch field, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/"); {
	case path == "" || path == "/":
		obj, _ := value.(map[string]any)
		return objectValues(obj)
	case slices.Contains(secretFields, field) && rest == "":
		return objectValues(map[string]any{field: value})
	case slices.Contains(secretFields, field):
		return [][]byte{decode(field, value)}
	}
	return nil
}

// redactObject redacts a Secret object (or template) in place.
func redactObject(obj map[string]any, embedded []string) {
	if obj == nil {
		return
	}
	for _, field := range secretFields {
		m, _ := obj[field].(map[string]any)
		for key, v := range m {
			m[key] = marker(len(decode(field, v)))
		}
	}
	meta, _ := obj["metadata"].(map[string]any)
	redactAnnotations(meta, embedded)
}

// redactAnnotations redacts, in metadata, the last-applied configuration
// and every annotation that holds one of the embedded values.
func redactAnnotations(meta map[string]any, embedded []string) {
	ann, _ := meta["annotations"].(map[string]any)
	for key, v := range ann {
		ann[key] = redactAnnotation(key, v, embedded)
	}
}

func redactAnnotation(key string, v any, embedded []string) any {
	s := fmt.Sprint(v)
	if key == lastApplied || holdsAny(s, embedded) {
		return marker(len(s))
	}
	return v
}

// redactOverride returns the value of an override of path, redacted.
func redactOverride(path string, value any, embedded []string) any {
	field, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch {
	case path == "" || path == "/":
		obj, ok := value.(map[string]any)
		if !ok {
			return marker(len(fmt.Sprint(value)))
		}
		redactObject(obj, embedded)
	case slices.Contains(secretFields, field) && rest == "":
		m, ok := value.(map[string]any)
		if !ok {
			return marker(len(fmt.Sprint(value)))
		}
		redactObject(map[string]any{field: m}, embedded)
	case slices.Contains(secretFields, field):
		return marker(len(decode(field, value)))
	case field == "metadata" && rest == "":
		meta, _ := value.(map[string]any)
		redactAnnotations(meta, embedded)
	case field == "metadata" && rest == "annotations":
		redactAnnotations(map[string]any{"annotations": value}, embedded)
	case field == "metadata" && strings.HasPrefix(rest, "annotations/"):
		return redactAnnotation(unescapePointer(strings.TrimPrefix(rest, "annotations/")), value, embedded)
	}
	return value
}

// unescapePointer unescapes a JSON pointer token (RFC 6901).
func unescapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}

// decode returns the bytes a value of field stands for (scrub.Decode).
func decode(field string, v any) []byte { return scrub.Decode(field, v) }

// marker stands for a redacted value of n bytes.
func marker(n int) string {
	return fmt.Sprintf("<redacted: %d bytes>", n)
}
