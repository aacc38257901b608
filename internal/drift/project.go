package drift

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Owned returns the leaf fields that entries, the managed fields of a
// member's copy, own, whoever the manager, the status subresource's left
// out. Of a copy whose content Fedwarden applied last, these and the
// copy's metadata are all Detect and Hidden read: other managers' leaves
// are compared by value, and every leaf desired sets that the copy still
// holds is owned, by Fedwarden or by whoever took it over; a field no
// manager owns (a server default) is read by neither.
func Owned(entries []metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	owned := &fieldpath.Set{}
	for _, entry := range entries {
		if entry.Subresource == statusSubresource || entry.FieldsV1 == nil {
			continue
		}
		set, err := fieldsOf(entry)
		if err != nil {
			return nil, err
		}
		owned = owned.Union(set.Leaves())
	}
	return owned, nil
}

// fieldsOf is the set of fields entry owns.
func fieldsOf(entry metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	set := &fieldpath.Set{}
	if err := set.FromJSON(entry.FieldsV1.GetRawReader()); err != nil {
		return nil, fmt.Errorf("reading the managed fields of %s: %w", entry.Manager, err)
	}
	return set, nil
}

// Project cuts obj down, in place, to the part fields hold, and returns
// it: the whole value of each member of fields, and, along the paths to
// them, maps and lists cut down to what lies on those paths. Paths select
// list items as Detect follows them (index), so that Detect reads in the
// projection what it read in obj: an item selected by its key keeps its key
// fields, one selected by its value is kept whole, and a list any path
// enters by position is kept whole, so that positions do not move.
//
// It works in place, for what it keeps to cost no memory it did not cost
// before: a member informer's transform may change the object it is given,
// which nothing else holds.
func Project(obj map[string]any, fields *fieldpath.Set) map[string]any {
	return projectMap(obj, fields, nil)
}

// project is the part of v that fields hold.
func project(v any, fields *fieldpath.Set) any {
	switch x := v.(type) {
	case map[string]any:
		return projectMap(x, fields, nil)
	case []any:
		return projectList(x, fields)
	}
	return v // a scalar where fields go deeper: it is all there is
}

// groupSlots is how many entries one group of a Go map holds: a map of
// that many entries or fewer takes a single group.
const groupSlots = 8

// projectMap cuts m down to what fields hold; the fields of key, if any,
// are kept whole.
func projectMap(m map[string]any, fields *fieldpath.Set, key *value.FieldList) map[string]any {
	before := len(m)
	for name, v := range m {
		pe := fieldpath.PathElement{FieldName: &name}
		if fields.Members.Has(pe) || isKey(key, name) {
			continue
		}
		if child, ok := fields.Children.Get(pe); ok {
			m[name] = project(v, child)
			continue
		}
		delete(m, name)
	}
	if before > groupSlots && len(m) <= groupSlots {
		// A map keeps its table when keys are deleted: move what is left
		// into a map of one group.
		small := make(map[string]any, len(m))
		for name, v := range m {
			small[name] = v
		}
		return small
	}
	return m
}

// isKey tells whether name is one of key's fields.
func isKey(key *value.FieldList, name string) bool {
	if key == nil {
		return false
	}
	for _, f := range *key {
		if f.Name == name {
			return true
		}
	}
	return false
}

// projectList cuts l down to the items fields select, each cut down in
// turn, in their order.
func projectList(l []any, fields *fieldpath.Set) []any {
	if byPosition(fields.Members.Iterate) || byPosition(fields.Children.Iterate) {
		return l
	}
	// What selects each item: a member keeps it whole; a child alone, in
	// part; two elements selecting one item (a duplicate key) keep it
	// whole rather than choose.
	type selection struct {
		whole bool
		by    fieldpath.PathElement
		child *fieldpath.Set
	}
	sel := make([]selection, len(l))
	fields.Members.Iterate(func(pe fieldpath.PathElement) {
		if i := index(l, pe); i >= 0 {
			sel[i].whole = true
		}
	})
	fields.Children.Iterate(func(pe fieldpath.PathElement) {
		if i := index(l, pe); i >= 0 {
			sel[i].whole = sel[i].whole || sel[i].child != nil
			sel[i].by = pe
			sel[i].child, _ = fields.Children.Get(pe)
		}
	})
	out := l[:0]
	for i, item := range l {
		switch {
		case sel[i].whole:
			out = append(out, item)
		case sel[i].child != nil:
			out = append(out, projectItem(item, sel[i].by, sel[i].child))
		}
	}
	clear(l[len(out):]) // the dropped items' slots
	return out
}

// projectItem is the part of item, which pe selects in its list, that
// fields hold, with what selects it: its key fields, or, when selected by
// value, all of it.
func projectItem(item any, pe fieldpath.PathElement, fields *fieldpath.Set) any {
	m, ok := item.(map[string]any)
	if !ok || pe.Key == nil {
		return item
	}
	return projectMap(m, fields, pe.Key)
}

// byPosition tells whether any of the path elements iterate yields selects
// a list item by its index.
func byPosition(iterate func(func(fieldpath.PathElement))) bool {
	found := false
	iterate(func(pe fieldpath.PathElement) { found = found || pe.Index != nil })
	return found
}
