package diff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// differ compares the copies of federated resources of one host.
type differ struct {
	host         client.Client
	disco        discovery.DiscoveryInterface
	members      *memberdiff.Members
	controlPlane string
	timeout      time.Duration
	// showSecrets prints a Secret's values rather than redacting them.
	showSecrets bool
	out, errOut io.Writer
}

func newDiffer(s streams.IO, host *kubeconfig.Cluster, o *options) (*differ, error) {
	c, disco, err := host.Clients(o.timeout)
	if err != nil {
		return nil, err
	}
	return &differ{
		host: c, disco: disco, members: memberdiff.NewMembers(o.members.ControlPlane, o.members.Networks, "fedwarden-diff"), controlPlane: o.members.ControlPlane,
		timeout: o.timeout, showSecrets: o.showSecrets, out: s.Out, errOut: s.ErrOut,
	}, nil
}

// federated is the federated resource being compared, and what the host
// says of it.
type federated struct {
	kind kindref.Kind
	fed  *unstructured.Unstructured
	cpv  *typesv1beta1.ClusterPropagatedVersion
	// res is what comparing its copies takes.
	res *memberdiff.Resource
}

// describe names the resource in messages: FederatedDeployment shop/web.
func (r *federated) describe() string {
	return r.kind.Type.Federated.Kind + " " + cache.NewObjectName(r.fed.GetNamespace(), r.fed.GetName()).String()
}

// diff compares the resource ref names in each cluster it is placed on, or
// only in cluster, prints the clusters that differ, and returns an error
// with exit code exitDiffers when one does.
func (d *differ) diff(ctx context.Context, ref kindref.Ref, namespace, cluster string) error {
	r, err := d.federated(ctx, ref, namespace)
	if err != nil {
		return err
	}
	placed, err := placedClusters(r, cluster)
	if err != nil {
		return err
	}
	if len(placed) == 0 {
		fmt.Fprintf(d.errOut, "%s is placed on no cluster: nothing to compare\n", r.describe())
		return nil
	}
	fmt.Fprintf(d.errOut, "Comparing %s in %s: %s\n", r.describe(), clusters(len(placed)), strings.Join(names(placed), ", "))
	var differing, failed []string
	for _, pc := range placed {
		v, err := d.compare(ctx, r, pc)
		switch {
		case errors.Is(err, memberdiff.ErrPullCluster):
			// Not read from here: what its agent reported is the answer.
			report, drifted := agentReport(r.cpv, string(pc.Name))
			fmt.Fprintf(d.errOut, "%s: Pull cluster, not read from the host; %s\n", pc.Name, report)
			if drifted {
				differing = append(differing, string(pc.Name))
			}
		case err != nil:
			fmt.Fprintf(d.errOut, "%s: not compared: %v\n", pc.Name, err)
			failed = append(failed, string(pc.Name))
		case v.Differs():
			fmt.Fprintf(d.errOut, "%s: differs: %s\n", pc.Name, strings.Join(v.Reasons, "; "))
			if _, err := io.WriteString(d.out, v.Text); err != nil {
				return err
			}
			differing = append(differing, string(pc.Name))
		default:
			fmt.Fprintf(d.errOut, "%s: in sync\n", pc.Name)
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("%s could not be compared in %s: %s", r.describe(), clusters(len(failed)), strings.Join(failed, ", "))
	case len(differing) > 0:
		return &streams.ExitError{Code: exitDiffers, Err: fmt.Errorf("%s differs in %d of %s: %s",
			r.describe(), len(differing), clusters(len(placed)), strings.Join(differing, ", "))}
	}
	return nil
}

// federated reads the federated resource, its ClusterPropagatedVersion and
// its drift policy.
func (d *differ) federated(ctx context.Context, ref kindref.Ref, namespace string) (*federated, error) {
	kind, res, err := memberdiff.Find(ctx, d.host, d.disco, ref, namespace, d.controlPlane)
	if err != nil {
		return nil, err
	}
	return &federated{kind: kind, fed: res.Fed, cpv: res.CPV, res: res}, nil
}

// placedClusters returns the clusters to compare: those of the CPV, or
// only cluster, which must be one of them.
func placedClusters(r *federated, cluster string) ([]typesv1beta1.PlacedCluster, error) {
	placed := r.cpv.Spec.Clusters
	if cluster == "" {
		return placed, nil
	}
	i := slices.IndexFunc(placed, func(pc typesv1beta1.PlacedCluster) bool { return string(pc.Name) == cluster })
	if i < 0 {
		on := "no cluster"
		if len(placed) > 0 {
			on = strings.Join(names(placed), ", ")
		}
		return nil, streams.UsageError(fmt.Errorf("--cluster %s: %s is not placed there; it is placed on %s", cluster, r.describe(), on))
	}
	return placed[i : i+1], nil
}

// compare compares the resource's copy in one cluster.
func (d *differ) compare(ctx context.Context, r *federated, pc typesv1beta1.PlacedCluster) (memberdiff.Verdict, error) {
	return memberdiff.Copy(ctx, memberdiff.Options{Members: d.members, Host: d.host, Timeout: d.timeout, ShowSecrets: d.showSecrets}, r.res, pc)
}

func names(placed []typesv1beta1.PlacedCluster) []string {
	out := make([]string, 0, len(placed))
	for _, pc := range placed {
		out = append(out, string(pc.Name))
	}
	return out
}

// clusters says "1 cluster", "2 clusters".
func clusters(n int) string {
	if n == 1 {
		return "1 cluster"
	}
	return fmt.Sprintf("%d clusters", n)
}

// agentReport says what a Pull cluster's agent reported in the CPV, and
// whether that is a difference.
func agentReport(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) (string, bool) {
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) != cluster {
			continue
		}
		report := fmt.Sprintf("its agent reports %s at template version %s, override version %s", cv.State, cv.TemplateVersion, cv.OverrideVersion)
		if len(cv.ChangedPaths) > 0 {
			report += ": changed " + strings.Join(cv.ChangedPaths, ", ")
		}
		current := cv.TemplateVersion == cpv.Status.TemplateVersion && cv.OverrideVersion == cpv.Status.OverrideVersion
		return report, cv.State != typesv1beta1.InSync || !current
	}
	return "its agent has not reported yet", true
}
