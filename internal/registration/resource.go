package registration

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// ServedResources returns, sorted by group and name, the resources of a
// member's discovery that
// propagation can write and watch: top-level resources (never subresources
// such as serviceaccounts/token, pods/exec or nodes/proxy, which would let
// the host act as others) that support get, list, watch and create.
func ServedResources(lists []*metav1.APIResourceList) []Resource {
	var out []Resource
	seen := map[Resource]bool{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "get", "list", "watch", "create") {
				continue
			}
			res := Resource{Group: gv.Group, Resource: r.Name}
			if !seen[res] && res.validate() == nil {
				seen[res] = true
				out = append(out, res)
			}
		}
	}
	// Sorted, so that the same member gives the same ClusterRole: joining
	// again then writes nothing.
	slices.SortFunc(out, func(a, b Resource) int {
		return strings.Compare(a.Group+"/"+a.Resource, b.Group+"/"+b.Resource)
	})
	return out
}

func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(verbs, w) {
			return false
		}
	}
	return true
}
