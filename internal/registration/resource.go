package registration

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Resource is a resource of an API group, as in RBAC rules: "deployments"
// of "apps"; the core group is "".
type Resource struct {
	Group    string
	Resource string
}

// String returns the resource as kubectl writes it: resource[.group].
func (r Resource) String() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// ParseResource parses resource[.group], such as "configmaps" or
// "deployments.apps".
func ParseResource(s string) (Resource, error) {
	resource, group, _ := strings.Cut(strings.TrimSpace(s), ".")
	r := Resource{Group: group, Resource: resource}
	if err := r.validate(); err != nil {
		return Resource{}, err
	}
	return r, nil
}

// ParseResources parses each resource[.group] of list, dropping repeats and
// keeping the order.
func ParseResources(list []string) ([]Resource, error) {
	var (
		resources []Resource
		errs      []error
		seen      = make(map[Resource]bool, len(list))
	)
	for _, s := range list {
		r, err := ParseResource(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !seen[r] {
			seen[r] = true
			resources = append(resources, r)
		}
	}
	return resources, errors.Join(errs...)
}

func (r Resource) validate() error {
	if msgs := validation.IsDNS1123Label(r.Resource); len(msgs) > 0 {
		return fmt.Errorf("resource %q is not valid: write resource[.group] in lower case, as in configmaps or deployments.apps (%s)",
			r.String(), strings.Join(msgs, "; "))
	}
	if r.Group == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Subdomain(r.Group); len(msgs) > 0 {
		return fmt.Errorf("group %q of resource %q is not valid: %s", r.Group, r.String(), strings.Join(msgs, "; "))
	}
	return nil
}
