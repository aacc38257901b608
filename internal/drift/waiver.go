package drift

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// DefaultMaxWaiver is how far ahead a waiver may expire and still be
// honoured, unless the controller's --max-waiver-duration says otherwise.
const DefaultMaxWaiver = 30 * 24 * time.Hour

// Waiver is a waiver of the resource's drift policy that names the
// cluster: its paths' drift is kept until Expires.
type Waiver struct {
	Paths   []string
	Expires time.Time
	Reason  string
	Owner   string
}

// waivers returns the waivers of p that apply in cluster: those that name
// it, and those whose clusterSelector its labels match. A selector that
// does not parse applies nowhere, and is the error.
func waivers(p *typesv1beta1.DriftPolicy, cluster string, clusterLabels map[string]string) ([]Waiver, error) {
	var out []Waiver
	var errs []error
	for i, w := range p.Waivers {
		applies, err := appliesIn(w, cluster, clusterLabels)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.driftPolicy.waivers[%d].clusterSelector: %w", i, err))
		}
		if !applies {
			continue
		}
		paths := make([]string, 0, len(w.Paths))
		for _, path := range w.Paths {
			paths = append(paths, string(path))
		}
		out = append(out, Waiver{Paths: paths, Expires: w.Expires.Time, Reason: w.Reason, Owner: w.Owner})
	}
	return out, errors.Join(errs...)
}

// SelectsByLabel tells whether a waiver of p selects clusters by label.
func SelectsByLabel(p *typesv1beta1.DriftPolicy) bool {
	return p != nil && slices.ContainsFunc(p.Waivers, func(w typesv1beta1.DriftWaiver) bool { return w.ClusterSelector != nil })
}

// appliesIn tells whether w applies in cluster, whose FederatedCluster has
// clusterLabels.
func appliesIn(w typesv1beta1.DriftWaiver, cluster string, clusterLabels map[string]string) (bool, error) {
	if w.ClusterSelector == nil {
		return slices.Contains(w.Clusters, typesv1beta1.ClusterName(cluster)), nil
	}
	sel, err := w.ClusterSelector.AsSelector()
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(clusterLabels)), nil
}

// Active returns the waivers of p honoured at now: those that have not
// expired and expire at most the policy's MaxWaiver ahead (DefaultMaxWaiver
// when unset).
func (p Policy) Active(now time.Time) []Waiver {
	limit := p.MaxWaiver
	if limit <= 0 {
		limit = DefaultMaxWaiver
	}
	var out []Waiver
	for _, w := range p.Waivers {
		if w.Expires.After(now) && !w.Expires.After(now.Add(limit)) {
			out = append(out, w)
		}
	}
	return out
}

// Covers tells whether the waiver covers the field at pointer: a path
// covers itself and everything under it.
func (w Waiver) Covers(pointer string) bool {
	return slices.ContainsFunc(w.Paths, func(path string) bool {
		return pointer == path || strings.HasPrefix(pointer, strings.TrimSuffix(path, "/")+"/")
	})
}

// Waive splits changes into those an active waiver covers at now and the
// rest, and returns the waiver of the waived ones that expires first (the
// zero Waiver when none is waived).
func (p Policy) Waive(changes []Change, now time.Time) (waived, rest []Change, first Waiver) {
	active := p.Active(now)
	for _, c := range changes {
		i := slices.IndexFunc(active, func(w Waiver) bool { return w.Covers(c.Path) })
		if i < 0 {
			rest = append(rest, c)
			continue
		}
		waived = append(waived, c)
		if first.Expires.IsZero() || active[i].Expires.Before(first.Expires) {
			first = active[i]
		}
	}
	return waived, rest, first
}

// Unhonoured says why the waivers that cover some of changes do not keep
// them at now: expired, or expiring further ahead than the policy honours.
// "" when no waiver covers any of them.
func (p Policy) Unhonoured(changes []Change, now time.Time) string {
	limit := p.MaxWaiver
	if limit <= 0 {
		limit = DefaultMaxWaiver
	}
	var out []string
	for _, w := range p.Waivers {
		if !slices.ContainsFunc(changes, func(c Change) bool { return w.Covers(c.Path) }) {
			continue
		}
		switch expires := w.Expires.UTC().Format(time.RFC3339); {
		case !w.Expires.After(now):
			out = append(out, fmt.Sprintf("the waiver %q expired at %s", w.Reason, expires))
		case w.Expires.After(now.Add(limit)):
			out = append(out, fmt.Sprintf("the waiver %q is not honoured: it expires at %s, more than %s ahead (--max-waiver-duration)", w.Reason, expires, limit))
		}
	}
	return strings.Join(out, "; ")
}

// Retained returns the paths whose member values a write keeps at now:
// those of the active waivers.
func (p Policy) Retained(now time.Time) []string {
	var out []string
	for _, w := range p.Active(now) {
		out = append(out, w.Paths...)
	}
	return out
}

// NextExpiry returns the earliest expiry after now of p's waivers, zero
// when none is ahead: a sync then lets the policy apply again.
func NextExpiry(p *typesv1beta1.DriftPolicy, now time.Time) time.Time {
	var next time.Time
	if p == nil {
		return next
	}
	for _, w := range p.Waivers {
		if t := w.Expires.Time; t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// Keep sets, in obj, the value live has at pointer, when live has one: a
// write that keeps the member's value of a field. A path live lacks leaves
// obj as it is.
func Keep(obj, live map[string]any, pointer string) {
	tokens := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	var dst, src any = obj, live
	for i, token := range tokens {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		last := i == len(tokens)-1
		switch s := src.(type) {
		case map[string]any:
			v, ok := s[token]
			d, isMap := dst.(map[string]any)
			if !ok || !isMap {
				return
			}
			if last {
				d[token] = runtimeCopy(v)
				return
			}
			if _, has := d[token]; !has {
				// Only the kept field comes over, not its siblings.
				if _, isMap := v.(map[string]any); !isMap {
					return
				}
				d[token] = map[string]any{}
			}
			src, dst = v, d[token]
		case []any:
			n, err := strconv.Atoi(token)
			d, isList := dst.([]any)
			if err != nil || !isList || n < 0 || n >= len(s) || n >= len(d) {
				return
			}
			if last {
				d[n] = runtimeCopy(s[n])
				return
			}
			src, dst = s[n], d[n]
		default:
			return
		}
	}
}

// runtimeCopy deep-copies a JSON value.
func runtimeCopy(v any) any {
	return runtime.DeepCopyJSONValue(v)
}
