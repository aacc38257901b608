package drift

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Policy is the drift policy in effect for one cluster.
type Policy struct {
	Remediation typesv1beta1.Remediation
	IgnorePaths []string
	// IgnoreManagers are the field managers whose writes are never drift.
	IgnoreManagers []string
	// Waivers are the resource's waivers that name the cluster, expired or
	// not (Active says which are honoured).
	Waivers []Waiver
	// MaxWaiver is how far ahead a waiver may expire and be honoured;
	// DefaultMaxWaiver when 0.
	MaxWaiver time.Duration
	// Invalid says why a waiver's clusterSelector could not be judged:
	// such a waiver applies nowhere, and a sync that would write the copy
	// must not, lest it undo what the waiver was meant to keep.
	Invalid error
}

// PolicyFor resolves p for cluster, whose FederatedCluster has
// clusterLabels: the cluster's exception, else the resource's
// remediation, else def; ignored paths and managers add up.
func PolicyFor(p *typesv1beta1.DriftPolicy, cluster string, clusterLabels map[string]string, def typesv1beta1.Remediation) Policy {
	out := Policy{Remediation: def}
	if p == nil {
		return out
	}
	if p.Remediation != "" {
		out.Remediation = p.Remediation
	}
	out.ignore(p.IgnorePaths, p.IgnoreManagers)
	for _, c := range p.Clusters {
		if string(c.Name) != cluster {
			continue
		}
		if c.Remediation != "" {
			out.Remediation = c.Remediation
		}
		out.ignore(c.IgnorePaths, c.IgnoreManagers)
	}
	out.Waivers, out.Invalid = waivers(p, cluster, clusterLabels)
	return out
}

// ignore adds paths and managers to those p ignores.
func (p *Policy) ignore(paths []typesv1beta1.JSONPointer, managers []typesv1beta1.FieldManager) {
	for _, path := range paths {
		p.IgnorePaths = append(p.IgnorePaths, string(path))
	}
	for _, m := range managers {
		p.IgnoreManagers = append(p.IgnoreManagers, string(m))
	}
}

// Enforced tells whether drift is re-applied at once.
func (p Policy) Enforced() bool { return p.Remediation != typesv1beta1.RemediationAlert }

// Ignored tells whether the policy ignores the field at pointer: an ignored
// path covers itself and everything under it.
func (p Policy) Ignored(pointer string) bool {
	return slices.ContainsFunc(p.IgnorePaths, func(ignored string) bool {
		return pointer == ignored || strings.HasPrefix(pointer, strings.TrimSuffix(ignored, "/")+"/")
	})
}

// IgnoresManager tells whether the policy ignores what manager writes. A
// removed field, which nobody owns (""), is never ignored this way.
func (p Policy) IgnoresManager(manager string) bool {
	return manager != "" && slices.Contains(p.IgnoreManagers, manager)
}

// Filter drops the changes the policy ignores: in ignored paths, or made
// by an ignored manager.
func (p Policy) Filter(changes []Change) []Change {
	return slices.DeleteFunc(slices.Clone(changes), func(c Change) bool { return p.Ignored(c.Path) || p.IgnoresManager(c.Manager) })
}

// Detect is the package's Detect under the policy: the fields of desired
// that live holds with another value or lacks, outside the ignored paths,
// sorted by path, at most MaxPaths. The fields an ignored manager owns are
// not compared, so a field it shares with another manager is still
// compared for that one.
func (p Policy) Detect(desired, live *unstructured.Unstructured, self string) ([]Change, error) {
	changes, err := p.detect(desired, live, self)
	if len(changes) > MaxPaths {
		changes = changes[:MaxPaths]
	}
	return changes, err
}

// detect is Detect without the bound.
func (p Policy) detect(desired, live *unstructured.Unstructured, self string) ([]Change, error) {
	changes, err := detect(desired, live, func(m string) bool { return m == self || p.IgnoresManager(m) })
	if err != nil {
		return nil, err
	}
	return p.Filter(changes), nil
}

// Hidden returns the JSON pointers of the fields of desired that differ in
// live but that the policy ignores (an ignored path, an ignored manager's
// write), for a diff to leave out.
func (p Policy) Hidden(desired, live *unstructured.Unstructured, self string) ([]string, error) {
	all, err := detect(desired, live, func(m string) bool { return m == self })
	if err != nil {
		return nil, err
	}
	kept, err := p.detect(desired, live, self)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range all {
		if !slices.ContainsFunc(kept, func(k Change) bool { return k.Path == c.Path }) {
			out = append(out, c.Path)
		}
	}
	return out, nil
}

// Paths returns the changes' paths, and their managers, each once, in order
// ("" stands for a removed field and is left out of the managers).
func Paths(changes []Change) (paths, managers []string) {
	for _, c := range changes {
		paths = append(paths, c.Path)
		if c.Manager != "" && !slices.Contains(managers, c.Manager) {
			managers = append(managers, c.Manager)
		}
	}
	return paths, managers
}

// Operations returns, for each field manager of changes and each operation
// it wrote them with, the paths it changed, in the order of changes; a
// removed field, which nobody owns, is in none.
func Operations(changes []Change) []typesv1beta1.ManagerOperation {
	var out []typesv1beta1.ManagerOperation
	for _, c := range changes {
		if c.Manager == "" {
			continue
		}
		i := slices.IndexFunc(out, func(o typesv1beta1.ManagerOperation) bool {
			return o.Manager == c.Manager && o.Operation == c.Operation
		})
		if i < 0 {
			out = append(out, typesv1beta1.ManagerOperation{Manager: c.Manager, Operation: c.Operation})
			i = len(out) - 1
		}
		out[i].Paths = append(out[i].Paths, c.Path)
	}
	return out
}
