package propagation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

// serving is what a member's discovery says of the type's target resource.
type serving int

const (
	// servingUnknown: discovery could not be read.
	servingUnknown serving = iota
	// served: the member serves the resource and takes new objects of it.
	served
	// notServed: the member does not serve the resource (its CRD is not
	// installed, or was removed).
	notServed
	// beingRemoved: the member still serves the resource but takes no new
	// objects of it: its CRD is being deleted, with every object of it.
	beingRemoved
)

// isRefusal tells whether err is the member's answer that it will not
// serve the kind to Fedwarden: forbidden, or not found. A list is never
// answered "not found" for a kind the member serves; a single object may
// be, which the caller tells apart.
func isRefusal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err)
}

// servingFrom reads the discovery answer list (or err) for resource.
func servingFrom(list *metav1.APIResourceList, err error, resource string) serving {
	switch {
	case apierrors.IsNotFound(err):
		return notServed // not even the group and version
	case err != nil:
		return servingUnknown
	}
	i := slices.IndexFunc(list.APIResources, func(res metav1.APIResource) bool { return res.Name == resource })
	switch {
	case i < 0:
		return notServed
	case !slices.Contains(list.APIResources[i].Verbs, "create"):
		// The verbs a CRD being deleted keeps: delete, deletecollection,
		// get, list and watch.
		return beingRemoved
	}
	return served
}

// serving asks member's discovery whether it serves the type's target
// resource. It is asked only when the member refused something: it costs
// a request.
func (a *applier) serving(ctx context.Context, member *clustercache.Member) serving {
	gv := a.typ.TargetResource.GroupVersion()
	path := "/apis/" + gv.String()
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	raw, err := member.Kube.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	var list metav1.APIResourceList
	if err == nil {
		err = json.Unmarshal(raw, &list)
	}
	return servingFrom(&list, err, a.typ.TargetResource.Resource)
}

// kindName names the type's target resource as fedwarden join
// --resources and the FederatedTypeConfigs do: deployments.apps,
// configmaps.
func (t Type) kindName() string {
	return t.TargetResource.GroupResource().String()
}

// refused is the result of a sync in cluster that the member's refusal err
// stopped, given what its discovery says (s): the kind is not served
// (KindNotServed), or the host's identity there may not use it
// (Forbidden). Its state is ApplyFailed: the member is up and answers, so
// it is not Unreachable, and the copy could not be made current. Nothing
// is written or deleted there because of it; it is retried, as installing
// the kind or joining the cluster again raises no event Fedwarden sees.
func refused(cluster string, typ Type, err error, s serving) clusterResult {
	res := clusterResult{name: cluster, state: typesv1beta1.ApplyFailed, retry: true, answer: err}
	kind := fmt.Sprintf("%s (version %s)", typ.kindName(), typ.TargetResource.Version)
	switch {
	case s == beingRemoved:
		res.reason = typesv1beta1.ClusterKindNotServed
		res.message = fmt.Sprintf("cluster %s is removing %s: its CustomResourceDefinition is being deleted there, with every object of the kind. "+
			"Nothing is written there until the kind is served again", cluster, kind)
	case s == notServed || (apierrors.IsNotFound(err) && s != served):
		res.reason = typesv1beta1.ClusterKindNotServed
		res.message = fmt.Sprintf("cluster %s does not serve %s: its CustomResourceDefinition is not installed there, or was removed. "+
			"Nothing is written or deleted there until it is installed; if the cluster joined before the kind was first installed, "+
			"then run 'fedwarden join %s' again to grant it", cluster, kind, cluster)
	case apierrors.IsNotFound(err):
		// Served now, though the member did not serve it when asked a
		// moment ago: it was installed meanwhile.
		res.reason = typesv1beta1.ClusterKindNotServed
		res.message = fmt.Sprintf("cluster %s did not serve %s when asked (%s), and serves it now: the copy is written at the next sync", cluster, kind, answer(err))
	default:
		res.reason = typesv1beta1.ClusterForbidden
		res.message = fmt.Sprintf("cluster %s refuses Fedwarden access to %s: %s. Fedwarden may use there the kinds the cluster served when it joined, "+
			"or those of --resources: run 'fedwarden join %s' again to grant the kinds installed or enabled since (with %s in --resources, "+
			"if it joined with a list). Nothing is written or deleted there until then", cluster, typ.kindName(), answer(err), cluster, typ.kindName())
	}
	return res
}

// answer is what the member's API server said in err, without the
// wrapping of the client on the way.
func answer(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
