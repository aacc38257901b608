package memberdiff

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
)

// lastApplied is the annotation `kubectl apply` keeps the applied object
// in: on a Secret, its data.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// minEmbedded is the length under which a Secret's value is not looked for
// in its other annotations: a value that short is found by chance in any
// text, and the annotations kept would be redacted for nothing. The
// last-applied configuration is redacted whatever the values.
const minEmbedded = scrub.MinLength

// secretFields are the fields of a Secret that hold its values.
var secretFields = scrub.Fields

// IsSecret tells whether gvk is the core Secret, whose values are
// redacted.
func IsSecret(gvk schema.GroupVersionKind) bool { return scrub.IsSecret(gvk) }

// redactSecret replaces, in the desired and live copies of a Secret as diff
// shows them, each value of data and stringData, the last-applied
// configuration and every other annotation that holds one of the values, by
// a marker: its length, and on the live side whether it differs from the
// desired one. Keys stay. Equal values get equal markers, so the diff shows
// which keys changed and nothing of what they hold. live may be nil.
func redactSecret(desired, live map[string]any) {
	want, got := secretValues(desired), secretValues(live)
	wantAnn, gotAnn := stringAnnotations(desired), stringAnnotations(live)
	// Values are looked for in annotations in every form a Secret shows
	// them in, raw and base64, from both sides.
	var embedded []string
	for _, values := range []map[string][]byte{want, got} {
		for _, v := range values {
			if len(v) >= minEmbedded {
				embedded = append(embedded, string(v), base64.StdEncoding.EncodeToString(v))
			}
		}
	}
	for _, side := range []struct {
		obj         map[string]any
		otherValues map[string][]byte
		otherAnn    map[string]string
		live        bool
	}{{desired, got, gotAnn, false}, {live, want, wantAnn, true}} {
		if side.obj == nil {
			continue
		}
		for _, field := range secretFields {
			m, ok := side.obj[field].(map[string]any)
			if !ok {
				continue
			}
			for key, v := range m {
				value := decode(field, v)
				other, ok := side.otherValues[key]
				m[key] = marker(len(value), side.live && ok && !bytes.Equal(value, other))
			}
		}
		redactAnnotations(side.obj, side.otherAnn, side.live, embedded)
	}
}

// redactAnnotations replaces obj's last-applied configuration, and every
// other annotation that holds one of the embedded values, by a marker; on
// the live side, it says whether the value differs from other's.
func redactAnnotations(obj map[string]any, other map[string]string, live bool, embedded []string) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	for key, v := range ann {
		s := fmt.Sprint(v)
		if key != lastApplied && !holdsAny(s, embedded) {
			continue
		}
		o, ok := other[key]
		ann[key] = marker(len(s), live && ok && o != s)
	}
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

// holdsAny tells whether s holds one of values.
func holdsAny(s string, values []string) bool {
	return slices.ContainsFunc(values, func(v string) bool { return strings.Contains(s, v) })
}

// secretValues returns a Secret's values by key, as the API server stores
// them: data decoded, with stringData over it. nil for a nil Secret.
func secretValues(obj map[string]any) map[string][]byte {
	if obj == nil {
		return nil
	}
	out := map[string][]byte{}
	for _, field := range secretFields {
		m, _ := obj[field].(map[string]any)
		for key, v := range m {
			out[key] = decode(field, v)
		}
	}
	return out
}

// decode returns the bytes a value of field stands for (scrub.Decode).
func decode(field string, v any) []byte { return scrub.Decode(field, v) }

// marker stands for a redacted value of n bytes.
func marker(n int, differs bool) string {
	if differs {
		return fmt.Sprintf("<redacted: %d bytes, differs>", n)
	}
	return fmt.Sprintf("<redacted: %d bytes>", n)
}
