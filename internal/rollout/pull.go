package rollout

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
)

// A Pull cluster's agent may not read ControllerRevisions: the host hands
// it, in the CPV's spec.rollout, the key of the latest revision and the
// content of each earlier one a Pull cluster is held at.

// RefOf is the CPV's name of revision r, whose content has key k.
func RefOf(n typesv1beta1.Revision, k Key) typesv1beta1.RevisionKey {
	return typesv1beta1.RevisionKey{Number: n, TemplateHash: k.Template, OverridesHash: k.Overrides}
}

// Names tells whether ref names the content whose key is k.
func Names(ref typesv1beta1.RevisionKey, k Key) bool {
	return ref.TemplateHash == k.Template && ref.OverridesHash == k.Overrides
}

// Held is r as the CPV's spec.rollout.held has it.
func Held(r Revision) (typesv1beta1.HeldRevision, error) {
	h := typesv1beta1.HeldRevision{Number: r.Number, TemplateVersion: r.Versions.Template, OverrideVersion: r.Versions.Override,
		TemplateHash: r.Key.Template, OverridesHash: r.Key.Overrides}
	if r.Template != nil {
		raw, err := json.Marshal(r.Template)
		if err != nil {
			return h, fmt.Errorf("encoding the template of revision %d: %w", r.Number, err)
		}
		h.Template = &apiextensionsv1.JSON{Raw: raw}
	}
	if len(r.Overrides) > 0 {
		raw, err := json.Marshal(r.Overrides)
		if err != nil {
			return h, fmt.Errorf("encoding the overrides of revision %d: %w", r.Number, err)
		}
		h.Overrides = &apiextensionsv1.JSON{Raw: raw}
	}
	return h, nil
}

// FromHeld is the revision h holds. Numbers are decoded as the API
// server's objects have them (int64 where integral), so that the revision
// renders in the agent exactly as it did in the host.
func FromHeld(h typesv1beta1.HeldRevision) (Revision, error) {
	r := Revision{Number: h.Number, Versions: render.Versions{Template: h.TemplateVersion, Override: h.OverrideVersion}}
	if h.Template != nil {
		if err := utiljson.Unmarshal(h.Template.Raw, &r.Template); err != nil {
			return r, fmt.Errorf("reading the template of held revision %d: %w", h.Number, err)
		}
	}
	if h.Overrides != nil {
		if err := utiljson.Unmarshal(h.Overrides.Raw, &r.Overrides); err != nil {
			return r, fmt.Errorf("reading the overrides of held revision %d: %w", h.Number, err)
		}
	}
	return r, nil
}

// HeldMatches tells whether r, the revision h holds (FromHeld), has the
// content h's key names, computed as KeyOf computes a resource's. A
// revision without overrides holds none, whether the resource had an
// empty list or no list at all: either key names it. A held revision
// without a key (a CPV written before keys were recorded there) is not
// checked.
func HeldMatches(h typesv1beta1.HeldRevision, r Revision) bool {
	if h.TemplateHash == "" && h.OverridesHash == "" {
		return true
	}
	template := r.Template
	if template == nil {
		template = map[string]any{}
	}
	if render.ContentHash(template) != h.TemplateHash {
		return false
	}
	if len(r.Overrides) == 0 {
		return h.OverridesHash == render.ContentHash([]any(nil)) || h.OverridesHash == render.ContentHash([]any{})
	}
	return render.ContentHash(r.Overrides) == h.OverridesHash
}
