package notify

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Filter selects the transitions a sink receives: each field that is set
// must hold the transition's value; an empty one matches any.
type Filter struct {
	Namespaces   []string
	Kinds        []string // the member copy's kind, any case: Deployment
	Clusters     []string
	States       []typesv1beta1.DriftState
	Remediations []typesv1beta1.Remediation
}

// Matches tells whether t passes f.
func (f Filter) Matches(t Transition) bool {
	return anyOf(f.Namespaces, t.Namespace) &&
		(len(f.Kinds) == 0 || slices.ContainsFunc(f.Kinds, func(k string) bool { return strings.EqualFold(k, t.Target.Kind) })) &&
		anyOf(f.Clusters, t.Cluster) &&
		anyOf(f.States, t.State) &&
		anyOf(f.Remediations, t.Remediation)
}

func anyOf[T comparable](allowed []T, v T) bool {
	return len(allowed) == 0 || slices.Contains(allowed, v)
}

// SinkSpec is one webhook sink: where to POST, and what.
type SinkSpec struct {
	URL    *url.URL
	Filter Filter
}

// Filter terms of a --notify-webhook value.
const (
	termNamespace   = "namespace"
	termKind        = "kind"
	termCluster     = "cluster"
	termState       = "state"
	termRemediation = "remediation"
)

// filterStates are the states a filter may name: the drift states.
var filterStates = []typesv1beta1.DriftState{typesv1beta1.ModifiedOutOfBand, typesv1beta1.Missing, typesv1beta1.OutdatedTemplate, typesv1beta1.OutdatedOverrides, typesv1beta1.Waived}

// ParseSinkSpec parses a --notify-webhook value: an http(s) URL, then
// optional filter terms separated by spaces (which a URL cannot hold),
// each key=value[,value…], with the keys namespace, kind, cluster, state
// and remediation, e.g.
//
//	https://hooks.example.com/fedwarden namespace=shop,pay state=ModifiedOutOfBand remediation=Alert
//
// Errors never quote the URL, which may hold credentials.
func ParseSinkSpec(s string) (SinkSpec, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return SinkSpec{}, errors.New("empty webhook")
	}
	u, err := parseURL(fields[0])
	if err != nil {
		return SinkSpec{}, err
	}
	spec := SinkSpec{URL: u}
	for _, term := range fields[1:] {
		if err := spec.Filter.add(term); err != nil {
			return SinkSpec{}, fmt.Errorf("webhook %s: %w", Redact(u), err)
		}
	}
	return spec, nil
}

func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL
		}
		return nil, fmt.Errorf("webhook URL does not parse: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("webhook URL must be absolute, http:// or https://")
	}
	return u, nil
}

// add adds one key=value[,value…] term to f.
func (f *Filter) add(term string) error {
	key, value, ok := strings.Cut(term, "=")
	values := strings.Split(value, ",")
	if !ok || slices.Contains(values, "") {
		return fmt.Errorf("filter term %q is not key=value[,value…]", term)
	}
	switch key {
	case termNamespace:
		f.Namespaces = append(f.Namespaces, values...)
	case termKind:
		f.Kinds = append(f.Kinds, values...)
	case termCluster:
		f.Clusters = append(f.Clusters, values...)
	case termState:
		return addChecked(&f.States, values, filterStates, key)
	case termRemediation:
		return addChecked(&f.Remediations, values, []typesv1beta1.Remediation{typesv1beta1.RemediationEnforce, typesv1beta1.RemediationAlert}, key)
	default:
		return fmt.Errorf("unknown filter %q: want %s, %s, %s, %s or %s", key, termNamespace, termKind, termCluster, termState, termRemediation)
	}
	return nil
}

// addChecked appends values to dst, each of which must be one of allowed.
func addChecked[T ~string](dst *[]T, values []string, allowed []T, key string) error {
	for _, v := range values {
		if !slices.Contains(allowed, T(v)) {
			return fmt.Errorf("%s %q: want one of %v", key, v, allowed)
		}
		*dst = append(*dst, T(v))
	}
	return nil
}

// Redact is the part of a sink's URL that logs, metrics and errors may
// show: the scheme and host. The user info, path and query may hold
// credentials (many chat webhooks carry their token in the path).
func Redact(u *url.URL) string {
	return u.Scheme + "://" + u.Host
}
