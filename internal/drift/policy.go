package drift

import (
	"slices"
	"strings"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Policy is the drift policy in effect for one cluster.
type Policy struct {
	Remediation typesv1beta1.Remediation
	IgnorePaths []string
}

// PolicyFor resolves p for cluster: the cluster's exception, else the
// resource's remediation, else def; ignored paths add up.
func PolicyFor(p *typesv1beta1.DriftPolicy, cluster string, def typesv1beta1.Remediation) Policy {
	out := Policy{Remediation: def}
	if p == nil {
		return out
	}
	if p.Remediation != "" {
		out.Remediation = p.Remediation
	}
	for _, path := range p.IgnorePaths {
		out.IgnorePaths = append(out.IgnorePaths, string(path))
	}
	for _, c := range p.Clusters {
		if string(c.Name) != cluster {
			continue
		}
		if c.Remediation != "" {
			out.Remediation = c.Remediation
		}
		for _, path := range c.IgnorePaths {
			out.IgnorePaths = append(out.IgnorePaths, string(path))
		}
	}
	return out
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

// Filter drops the changes the policy ignores.
func (p Policy) Filter(changes []Change) []Change {
	return slices.DeleteFunc(slices.Clone(changes), func(c Change) bool { return p.Ignored(c.Path) })
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
