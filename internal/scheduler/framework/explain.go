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
		items = append(items, "kept "+v.Cluster+", which "+keptBecause(v.Plugin, joinReasons(v.Reasons)))
	}
	for i, v := range d.RuledOut {
		s := v.String()
		if i == 0 {
			s = ruledOutPrefix + s
		}
		items = append(items, s)
	}
	for _, v := range d.Notes {
		items = append(items, "note: "+v.String())
	}
	for i, item := range items {
		next := msg + itemSeparator + item
		if left := len(items) - i - 1; left > 0 {
			if len(next)+len(itemSeparator+unlisted(left)) > limit {
				return truncate(msg+itemSeparator+unlisted(len(items)-i), limit)
			}
		}
		msg = next
	}
	return truncate(msg, limit)
}

// WhyNot says why the decision does not place the workload on cluster:
// each plugin that ruled it out with all its reasons, or why no decision was
// made, or that it was not chosen.
func (d Decision) WhyNot(cluster string) string {
	var reasons []string
	for _, v := range d.RuledOut {
		if v.Cluster == cluster {
			reasons = append(reasons, v.Plugin+": "+allReasons(v))
		}
	}
	switch {
	case len(reasons) > 0:
		return strings.Join(reasons, itemSeparator)
	case d.Failure != nil:
		return "no decision could be made: " + d.Failure.String()
	default:
		return "not chosen by the scheduler"
	}
}

// WhyKept says why cluster stays placed although a plugin would have
// dropped it (it holds a copy, see Decision.Kept), as Explain words it;
// "" when it was not kept so.
func (d Decision) WhyKept(cluster string) string {
	for _, v := range d.Kept {
		if v.Cluster == cluster {
			return "kept, as it " + keptBecause(v.Plugin, allReasons(v))
		}
	}
	return ""
}

func keptBecause(plugin, reasons string) string {
	return "holds a copy, despite " + plugin + ": " + reasons
}

// allReasons are v's reasons, every one: WhyNot and WhyKept explain one
// cluster, where Explain has room only for each verdict's first.
func allReasons(v Verdict) string { return strings.Join(v.Reasons, itemSeparator) }

// The pieces of an Explain message that WithoutRuledOutBy reads back.
const (
	itemSeparator  = "; "
	ruledOutPrefix = "ruled out "
	unlistedFormat = "and %d more"
)

func unlisted(n int) string { return fmt.Sprintf(unlistedFormat, n) }

// WithoutRuledOutBy returns msg, an Explain message, without the clusters
// plugin ruled out and without the count of items left unlisted: what a
// change elsewhere in the fleet re-words (a cluster joined that plugin
// rules out) taken away, the rest of the explanation as it was.
func WithoutRuledOutBy(msg, plugin string) string {
	items := strings.Split(msg, itemSeparator)
	kept := items[:0]
	for _, item := range items {
		if !ruledOutBy(item, plugin) && !isUnlisted(item) {
			kept = append(kept, item)
		}
	}
	return strings.Join(kept, itemSeparator)
}

// ruledOutBy reports whether item is a cluster plugin ruled out
// ("[ruled out ]NAME: PLUGIN: …", see Verdict.String).
func ruledOutBy(item, plugin string) bool {
	_, rest, ok := strings.Cut(strings.TrimPrefix(item, ruledOutPrefix), ": ")
	return ok && strings.HasPrefix(rest, plugin+": ")
}

// isUnlisted reports whether item is the count that ends a message too
// long to list every item.
func isUnlisted(item string) bool {
	var n int
	_, err := fmt.Sscanf(item, unlistedFormat, &n)
	return err == nil
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
