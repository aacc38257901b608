package framework

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Summary says where the workload goes, for example
// "member-1 (4 replicas), member-2 (6 replicas)", or "no cluster".
func (d Decision) Summary() string {
	if len(d.Clusters) == 0 {
		return "no cluster"
	}
	parts := make([]string, 0, len(d.Clusters))
	for _, c := range d.Clusters {
		if c.Replicas != nil {
			parts = append(parts, fmt.Sprintf("%s (%d replicas)", c.Name, *c.Replicas))
			continue
		}
		parts = append(parts, c.Name)
	}
	return strings.Join(parts, ", ")
}

// Explain is a message of at most limit bytes: the decision (or why none
// was made), the clusters kept for their copy and those ruled out, each
// with the plugin and its reason, then the notes. Items that do not fit are counted instead.
func (d Decision) Explain(limit int) string {
	msg := "scheduled to " + d.Summary()
	if d.Failure != nil {
		msg = "not scheduled: " + d.Failure.String()
	}
	items := make([]string, 0, len(d.Kept)+len(d.RuledOut)+len(d.Notes))
	for _, v := range d.Kept {
		items = append(items, "kept "+v.Cluster+", which holds a copy, despite "+v.Plugin+": "+joinReasons(v.Reasons))
	}
	for i, v := range d.RuledOut {
		s := v.String()
		if i == 0 {
			s = "ruled out " + s
		}
		items = append(items, s)
	}
	for _, v := range d.Notes {
		items = append(items, "note: "+v.String())
	}
	for i, item := range items {
		next := msg + "; " + item
		if left := len(items) - i - 1; left > 0 {
			if len(next)+len(fmt.Sprintf("; and %d more", left)) > limit {
				return truncate(msg+fmt.Sprintf("; and %d more", len(items)-i), limit)
			}
		}
		msg = next
	}
	return truncate(msg, limit)
}

func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	if limit < 3 {
		return s[:max(limit, 0)]
	}
	cut := limit - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut-- // never inside a character: the status must read back as written
	}
	return s[:cut] + "..."
}
