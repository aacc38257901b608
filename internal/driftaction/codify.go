// Package driftaction carries out what a user decides about a drift, with
// the user's own identity in the host: codify a member's edit into the
// cluster's overrides, or waive it until a date. `fedwarden drift codify`
// and `fedwarden drift waive` call it, and so does the console.
package driftaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/render"
)

// Codified is what codifying a cluster's drift makes: the resource's
// overrides with the cluster's entry changed, and the change of each path.
type Codified struct {
	Cluster   string
	Overrides []typesv1beta1.ClusterOverride
	Changes   []Change
}

// Codify reads, in cluster's copy of r, the member's values at the paths
// its CPV entry says drifted (or at paths, each of which must be one of
// them), and returns the overrides that make them desired there. It reads
// the member as o says (the host's credentials for it, read with o.Host's
// identity) and writes nothing.
func Codify(ctx context.Context, o memberdiff.Options, r *memberdiff.Resource, cluster string, paths []string) (*Codified, error) {
	pc, paths, err := drifted(r.CPV, cluster, paths)
	if err != nil {
		return nil, err
	}
	desired, live, err := memberdiff.Live(ctx, o, r, pc)
	if errors.Is(err, memberdiff.ErrPullCluster) {
		return nil, fmt.Errorf("cluster %s is a Pull cluster: the host keeps no credentials to read the values its copy has at %s, "+
			"so they cannot be codified from here; write them as overrides of %s yourself (kubectl edit), or waive the drift (fedwarden drift waive)",
			cluster, strings.Join(paths, ", "), cluster)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	if live == nil {
		return nil, fmt.Errorf("it has no copy in cluster %s now: there is nothing to codify", cluster)
	}
	spec, err := render.ParseSpec(r.Fed)
	if err != nil {
		return nil, err
	}
	overrides, changes, err := codified(spec.Overrides, cluster, desired.Object, live.Object, paths)
	if err != nil {
		return nil, err
	}
	return &Codified{Cluster: cluster, Overrides: overrides, Changes: changes}, nil
}

// Write writes the overrides to r's federated resource with c's identity
// (a server-side dry run when dryRun). A refusal of admission names the
// path of each override it refused.
func (cd *Codified) Write(ctx context.Context, c client.Client, r *memberdiff.Resource, dryRun bool) error {
	if err := WriteSpec(ctx, c, r.Fed, cd.Overrides, dryRun, "overrides"); err != nil {
		return refusedPaths(err, cd.Overrides, cd.Cluster)
	}
	return nil
}

// drifted returns the cluster's placement in cpv and the paths to codify:
// the drifted paths of its entry (ModifiedOutOfBand, or Waived: a kept edit
// may be codified too), or those of want, each of which must be
// one of them.
func drifted(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string, want []string) (typesv1beta1.PlacedCluster, []string, error) {
	i := slices.IndexFunc(cpv.Spec.Clusters, func(pc typesv1beta1.PlacedCluster) bool { return string(pc.Name) == cluster })
	if i < 0 {
		return typesv1beta1.PlacedCluster{}, nil, fmt.Errorf("it is not placed on cluster %s", cluster)
	}
	j := slices.IndexFunc(cpv.Status.ClusterVersions, func(cv typesv1beta1.ClusterVersion) bool { return string(cv.ClusterName) == cluster })
	if j < 0 {
		return typesv1beta1.PlacedCluster{}, nil, fmt.Errorf("its ClusterPropagatedVersion has no entry for cluster %s yet", cluster)
	}
	cv := cpv.Status.ClusterVersions[j]
	if (cv.State != typesv1beta1.ModifiedOutOfBand && cv.State != typesv1beta1.Waived) || len(cv.ChangedPaths) == 0 {
		return typesv1beta1.PlacedCluster{}, nil, fmt.Errorf("its copy in cluster %s is %s, with no field changed out of band: there is nothing to codify", cluster, cv.State)
	}
	if len(want) == 0 {
		return cpv.Spec.Clusters[i], cv.ChangedPaths, nil
	}
	for _, p := range want {
		if !slices.Contains(cv.ChangedPaths, p) {
			return typesv1beta1.PlacedCluster{}, nil, fmt.Errorf("--path %s did not drift in cluster %s; the drifted paths are %s", p, cluster, strings.Join(cv.ChangedPaths, ", "))
		}
	}
	return cpv.Spec.Clusters[i], want, nil
}

// Change is one codified path: the member's value (none when it removed
// the field) and what the resource wanted there.
type Change struct {
	Path    string
	Op      typesv1beta1.OverrideOp
	Value   any
	Desired any
}

// codified returns overrides with cluster's entry made to give each of
// paths the value live has there, and the changes that makes. An override
// the entry has already at a path is replaced in place; the others are
// kept, in their order, and new ones come last. A path live lacks and
// desired has becomes a remove; one both lack is an error.
func codified(overrides []typesv1beta1.ClusterOverride, cluster string, desired, live map[string]any, paths []string) ([]typesv1beta1.ClusterOverride, []Change, error) {
	out := make([]typesv1beta1.ClusterOverride, len(overrides))
	for i, co := range overrides {
		out[i] = *co.DeepCopy()
	}
	i := slices.IndexFunc(out, func(co typesv1beta1.ClusterOverride) bool { return string(co.ClusterName) == cluster })
	if i < 0 {
		out = append(out, typesv1beta1.ClusterOverride{ClusterName: typesv1beta1.ClusterName(cluster)})
		i = len(out) - 1
	}
	var changes []Change
	for _, p := range paths {
		c, err := changeAt(desired, live, p)
		if err != nil {
			return nil, nil, err
		}
		o := typesv1beta1.Override{Op: c.Op, Path: p}
		if c.Op != typesv1beta1.OverrideRemove {
			raw, err := json.Marshal(c.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("encoding the value at %s: %w", p, err)
			}
			o.Value = &apiextensionsv1.JSON{Raw: raw}
		}
		list := out[i].ClusterOverrides
		if k := slices.IndexFunc(list, func(e typesv1beta1.Override) bool { return e.Path == p }); k >= 0 {
			list[k] = o
		} else {
			out[i].ClusterOverrides = append(list, o)
		}
		changes = append(changes, c)
	}
	return out, changes, nil
}

// changeAt is the override that gives path the value live has there:
// replace when desired has the path, add when it does not, remove when
// live lacks it.
func changeAt(desired, live map[string]any, path string) (Change, error) {
	want, inDesired := valueAt(desired, path)
	got, inLive := valueAt(live, path)
	c := Change{Path: path, Value: got, Desired: want}
	switch {
	case inLive && inDesired:
		c.Op = typesv1beta1.OverrideReplace
	case inLive:
		c.Op = typesv1beta1.OverrideAdd
	case inDesired:
		c.Op = typesv1beta1.OverrideRemove
	default:
		return Change{}, fmt.Errorf("neither the member's copy nor the desired one has %s now: there is nothing to codify there", path)
	}
	return c, nil
}

// valueAt returns the value at a JSON pointer (RFC 6901) in obj.
func valueAt(obj map[string]any, pointer string) (any, bool) {
	var cur any = obj
	for _, token := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[token]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			var i int
			if _, err := fmt.Sscanf(token, "%d", &i); err != nil || fmt.Sprint(i) != token || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// refusedPaths names, in an admission refusal of overrides, the path each
// refused override of cluster has; other errors are returned as they are.
func refusedPaths(err error, overrides []typesv1beta1.ClusterOverride, cluster string) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return err
	}
	var refused []string
	for _, cause := range status.Status().Details.Causes {
		var i, j int
		if _, serr := fmt.Sscanf(cause.Field, "spec.overrides[%d].clusterOverrides[%d]", &i, &j); serr != nil ||
			i >= len(overrides) || j >= len(overrides[i].ClusterOverrides) || string(overrides[i].ClusterName) != cluster {
			continue
		}
		refused = append(refused, fmt.Sprintf("%s cannot be an override: %s", overrides[i].ClusterOverrides[j].Path, cause.Message))
	}
	if len(refused) == 0 {
		return err
	}
	return fmt.Errorf("the host refused the overrides, and nothing was written: %s", strings.Join(refused, "; "))
}
