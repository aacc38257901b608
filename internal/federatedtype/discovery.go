package federatedtype

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
)

// Discovery is what Resolve and FetchOpenAPI need of a discovery client,
// such as *discovery.DiscoveryClient.
type Discovery interface {
	ServerGroupsAndResourcesWithContext(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
	OpenAPIV3WithContext(ctx context.Context) openapi.ClientWithContext
}

var _ Discovery = (*discovery.DiscoveryClient)(nil)

// ErrUnknownResource says that the host serves no resource a name names.
var ErrUnknownResource = errors.New("unknown resource")

// fedwardenGroups are the groups of Fedwarden's own kinds, which are not
// federated.
var fedwardenGroups = []string{"core.kubefed.io", "types.kubefed.io", "scheduling.kubefed.io"}

// propagationVerbs are the verbs a kind must allow to be propagated.
var propagationVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// maxSuggestions bounds the near matches an error lists.
const maxSuggestions = 5

// candidate is a resource served at one group-version.
type candidate struct {
	gv        schema.GroupVersion
	resource  metav1.APIResource
	preferred bool
}

func (c candidate) target() Target {
	return Target{Group: c.gv.Group, Version: c.gv.Version, Kind: c.resource.Kind, Plural: c.resource.Name, Namespaced: c.resource.Namespaced}
}

// matches tells whether name (lower case) names c's resource, as kubectl
// accepts it: plural, singular, kind or short name.
func (c candidate) matches(name string) bool {
	r := c.resource
	return name == r.Name || name == r.SingularName || name == lower(r.Kind) || slices.Contains(r.ShortNames, name)
}

// Resolve finds the target kind that arg names in the host's discovery:
// <resource>[.<group>] where resource is a plural, singular, kind or short
// name, case-insensitively, as kubectl accepts it (<resource>.<version>.<group>
// too). version, when not empty, asks for that version; else the group's
// preferred version is used. An unknown resource is an error wrapping
// ErrUnknownResource that lists near matches.
func Resolve(ctx context.Context, disco Discovery, arg, version string) (Target, error) {
	candidates, err := serverResources(ctx, disco)
	if err != nil {
		return Target{}, err
	}
	name, group, argVersion := parseArg(lower(strings.TrimSpace(arg)), candidates)
	if version == "" {
		version = argVersion
	}
	var found []candidate
	for _, c := range candidates {
		if c.matches(name) && (group == "" || c.gv.Group == group) {
			found = append(found, c)
		}
	}
	if len(found) == 0 {
		return Target{}, fmt.Errorf("%w %q: the host serves no such resource%s", ErrUnknownResource, arg, suggest(name, candidates))
	}
	return pick(arg, found, version)
}

// parseArg splits arg into resource, group and version. A group whose
// first label is a version that the rest serves (deployments.v1.apps) gives
// the version.
func parseArg(arg string, candidates []candidate) (name, group, version string) {
	name, group, _ = strings.Cut(arg, ".")
	first, rest, ok := strings.Cut(group, ".")
	if !ok {
		return name, group, ""
	}
	for _, c := range candidates {
		if c.gv.Group == rest && c.gv.Version == first {
			return name, rest, first
		}
	}
	return name, group, ""
}

// pick chooses among the resources found: the first group in discovery
// order (the core group first, as kubectl does), at version or at its
// preferred version, and checks that it can be federated.
func pick(arg string, found []candidate, version string) (Target, error) {
	group := found[0].gv.Group
	var chosen *candidate
	var versions []string
	for i, c := range found {
		if c.gv.Group != group {
			continue
		}
		versions = append(versions, c.gv.Version)
		if (version != "" && c.gv.Version == version) || (version == "" && (chosen == nil || c.preferred)) {
			chosen = &found[i]
		}
	}
	if chosen == nil {
		return Target{}, fmt.Errorf("%w %q: %s is not served at version %s (versions: %s)",
			ErrUnknownResource, arg, found[0].target().Resource(), version, strings.Join(versions, ", "))
	}
	t := chosen.target()
	if slices.Contains(fedwardenGroups, t.Group) {
		return Target{}, fmt.Errorf("%w %q: %s is a Fedwarden kind, which is not federated", ErrUnknownResource, arg, t.Resource())
	}
	for _, v := range propagationVerbs {
		if !slices.Contains(chosen.resource.Verbs, v) {
			return Target{}, fmt.Errorf("%w %q: %s cannot be federated: the host does not allow %q on it (it allows %s)",
				ErrUnknownResource, arg, t.Resource(), v, strings.Join(chosen.resource.Verbs, ", "))
		}
	}
	return t, nil
}

// serverResources lists every resource the host serves (no subresources),
// groups in discovery order. Groups that fail discovery are left out.
func serverResources(ctx context.Context, disco Discovery) ([]candidate, error) {
	groups, lists, err := disco.ServerGroupsAndResourcesWithContext(ctx)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovering the host's resources: %w", err)
	}
	preferred := map[string]bool{}
	for _, g := range groups {
		preferred[g.PreferredVersion.GroupVersion] = true
	}
	var out []candidate
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			out = append(out, candidate{gv: gv, resource: r, preferred: preferred[l.GroupVersion]})
		}
	}
	return out, nil
}

// suggest lists the resources, but Fedwarden's, whose names are near name.
func suggest(name string, candidates []candidate) string {
	var near []string
	for _, c := range candidates {
		r := c.target().Resource()
		if !slices.Contains(near, r) && !slices.Contains(fedwardenGroups, c.gv.Group) && isNear(name, c.resource) {
			near = append(near, r)
		}
	}
	if len(near) == 0 {
		return ""
	}
	slices.Sort(near)
	if len(near) > maxSuggestions {
		near = near[:maxSuggestions]
	}
	return "; did you mean " + strings.Join(near, ", ") + "?"
}

// isNear tells whether name is a likely misspelling of r's names.
func isNear(name string, r metav1.APIResource) bool {
	for _, n := range append([]string{r.Name, r.SingularName, lower(r.Kind)}, r.ShortNames...) {
		if n == "" {
			continue
		}
		if (len(name) >= 3 && strings.Contains(n, name)) || distance(name, n) <= max(1, len(n)/4) {
			return true
		}
	}
	return false
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
