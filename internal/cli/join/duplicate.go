package join

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// refuseSecondName refuses to join the member under j's name when the host
// already has a FederatedCluster of another name for the same cluster: one
// whose status.clusterID is the UID of the member's kube-system namespace.
// Two names of one cluster would write the same objects and fight without
// end. Joining again under the same name is allowed (it updates the join).
// When the kube-system namespace cannot be read, nothing is refused: the
// health controller still tells a duplicate once it probes it.
func (j *joiner) refuseSecondName(ctx context.Context) error {
	ns := &corev1.Namespace{}
	if err := j.member.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		fmt.Fprintf(j.out, "%s: cannot read the member's kube-system namespace (%v); whether it is joined under another name is not checked\n", j.spec.Name, err)
		return nil
	}
	var clusters v1beta1.FederatedClusterList
	if err := j.host.Client.List(ctx, &clusters); err != nil {
		return fmt.Errorf("listing the FederatedClusters on the host, to check that the member is not joined under another name: %w", err)
	}
	if other := joinedAs(clusters.Items, j.spec.Name, string(ns.UID)); other != "" {
		return fmt.Errorf("this cluster is already joined as %s (the same kube-system namespace UID %s): "+
			"a second FederatedCluster of one cluster would write the same objects as the first; "+
			"join it again as %s, or unjoin %s first", other, ns.UID, other, other)
	}
	return nil
}

// joinedAs returns the name of a FederatedCluster other than name whose
// cluster ID is id, or "".
func joinedAs(clusters []v1beta1.FederatedCluster, name, id string) string {
	for _, c := range clusters {
		if c.Name != name && id != "" && c.Status.ClusterID == id && c.DeletionTimestamp.IsZero() {
			return c.Name
		}
	}
	return ""
}
