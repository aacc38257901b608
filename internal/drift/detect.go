package drift

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// MaxPaths bounds the changes Detect reports.
const MaxPaths = 20

// Change is one field of the desired object that differs in the member.
type Change struct {
	// Path is a JSON pointer into the member's copy.
	Path string
	// Manager is the field manager that owns the changed field in the
	// member, or "" when the field was removed (nobody owns it any more).
	Manager string
	// Operation is how Manager wrote it, as its managedFields entry says:
	// Apply or Update; "" for a removed field.
	Operation metav1.ManagedFieldsOperationType
}

// Detect returns the fields of desired that live, the member's copy,
// holds with another value or lacks, sorted by path, at most MaxPaths;
// self is Fedwarden's own field manager. Only fields another manager owns
// are compared by value, and fields desired sets are checked for presence.
// Fields written through the status subresource are not compared; those
// written through any other (scale, which sets spec.replicas, or a custom
// one) are.
func Detect(desired, live *unstructured.Unstructured, self string) ([]Change, error) {
	return Policy{}.Detect(desired, live, self)
}

// detect is Detect without the bound: skip tells the managers whose
// fields are not compared.
func detect(desired, live *unstructured.Unstructured, skip func(manager string) bool) ([]Change, error) {
	changes := map[string]Change{}
	for _, entry := range live.GetManagedFields() {
		if skip(entry.Manager) || entry.Subresource == statusSubresource || entry.FieldsV1 == nil {
			continue
		}
		if err := compareOwned(desired.Object, live.Object, entry, changes); err != nil {
			return nil, err
		}
	}
	for _, path := range missing(desired.Object, live.Object, "") {
		if _, seen := changes[path]; !seen {
			changes[path] = Change{Path: path}
		}
	}
	out := make([]Change, 0, len(changes))
	for _, c := range changes {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Change) int { return cmp.Compare(a.Path, b.Path) })
	return out, nil
}

// statusSubresource is the only subresource whose writes are never drift:
// status belongs to the member.
const statusSubresource = "status"

// compareOwned adds to changes each leaf field entry's manager owns whose
// value in live differs from desired's.
func compareOwned(desired, live map[string]any, entry metav1.ManagedFieldsEntry, changes map[string]Change) error {
	set, err := fieldsOf(entry)
	if err != nil {
		return err
	}
	set.Leaves().Iterate(func(p fieldpath.Path) {
		want, _, found := resolve(desired, p)
		if !found {
			return // a field Fedwarden does not set: not its business
		}
		got, pointer, inLive := resolve(live, p)
		if !inLive || Equal(want, got, pointer) {
			return
		}
		if _, seen := changes[pointer]; !seen {
			changes[pointer] = Change{Path: pointer, Manager: entry.Manager, Operation: entry.Operation}
		}
	})
	return nil
}

// resolve follows a managed-fields path in obj and returns the value there
// and its JSON pointer in obj.
func resolve(obj any, p fieldpath.Path) (any, string, bool) {
	var pointer strings.Builder
	cur := obj
	for _, pe := range p {
		var token string
		var ok bool
		cur, token, ok = step(cur, pe)
		if !ok {
			return nil, "", false
		}
		pointer.WriteString("/" + escape(token))
	}
	return cur, pointer.String(), true
}

// step follows one path element: the value there, and its JSON pointer
// token.
func step(cur any, pe fieldpath.PathElement) (any, string, bool) {
	if pe.FieldName != nil {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, "", false
		}
		v, ok := m[*pe.FieldName]
		return v, *pe.FieldName, ok
	}
	l, _ := cur.([]any)
	i := index(l, pe)
	if i < 0 {
		return nil, "", false
	}
	return l[i], strconv.Itoa(i), true
}

// index is the position in l of the item pe selects, by its index, its key
// or its value; -1 when there is none.
func index(l []any, pe fieldpath.PathElement) int {
	if pe.Index != nil {
		if *pe.Index < 0 || *pe.Index >= len(l) {
			return -1
		}
		return *pe.Index
	}
	for i, item := range l {
		if matches(item, pe) {
			return i
		}
	}
	return -1
}

// matches tells whether a list item is the one a key or value element
// selects.
func matches(item any, pe fieldpath.PathElement) bool {
	if pe.Value != nil {
		return Equal((*pe.Value).Unstructured(), item, "")
	}
	m, ok := item.(map[string]any)
	if !ok || pe.Key == nil {
		return false
	}
	for _, f := range *pe.Key {
		if !Equal(f.Value.Unstructured(), m[f.Name], "") {
			return false
		}
	}
	return true
}

// missing returns the JSON pointers of the leaves desired sets that live
// lacks. A zero value (false, 0, "", an empty list or map) may be dropped
// by the member's API server, so it is never missing. Lists of objects are
// matched by their name field when they have one, else by index.
func missing(desired, live any, prefix string) []string {
	switch d := desired.(type) {
	case map[string]any:
		l, _ := live.(map[string]any)
		var out []string
		for k, v := range d {
			lv, ok := l[k]
			if !ok {
				if !isZero(v) {
					out = append(out, prefix+"/"+escape(k))
				}
				continue
			}
			out = append(out, missing(v, lv, prefix+"/"+escape(k))...)
		}
		return out
	case []any:
		l, _ := live.([]any)
		var out []string
		for i, item := range d {
			j := counterpart(item, i, l)
			if j < 0 {
				if !isZero(item) {
					out = append(out, fmt.Sprintf("%s/%d", prefix, i))
				}
				continue
			}
			out = append(out, missing(item, l[j], fmt.Sprintf("%s/%d", prefix, j))...)
		}
		return out
	}
	return nil
}

// counterpart is the index in live of desired's i-th item: the item of the
// same name for objects with a name, else the same index; -1 when none.
func counterpart(item any, i int, live []any) int {
	if m, ok := item.(map[string]any); ok {
		if name, ok := m["name"]; ok {
			return slices.IndexFunc(live, func(x any) bool {
				lm, ok := x.(map[string]any)
				return ok && Equal(name, lm["name"], "")
			})
		}
	}
	if i < len(live) {
		return i
	}
	return -1
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case int64:
		return x == 0
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// Equal compares two JSON values found at pointer; numbers by value, and
// quantities under a resources-like field (requests, limits, overhead,
// hard) by amount, since the API server normalizes them ("1000m" becomes
// "1").
func Equal(a, b any, pointer string) bool {
	if na, ok := number(a); ok {
		nb, ok := number(b)
		return ok && na == nb
	}
	if sa, ok := a.(string); ok && isQuantityPath(pointer) {
		if sb, ok := b.(string); ok {
			qa, errA := resource.ParseQuantity(sa)
			qb, errB := resource.ParseQuantity(sb)
			if errA == nil && errB == nil {
				return qa.Cmp(qb) == 0
			}
		}
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !Equal(v, y[k], pointer+"/"+escape(k)) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, func(p, q any) bool { return Equal(p, q, pointer) })
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// isQuantityPath tells whether a pointer leads into a list of resource
// quantities.
func isQuantityPath(pointer string) bool {
	for _, part := range []string{"/requests/", "/limits/", "/overhead/", "/hard/", "/capacity/", "/allocatable/"} {
		if strings.Contains(pointer, part) {
			return true
		}
	}
	return false
}

// escape escapes a JSON pointer token.
func escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
