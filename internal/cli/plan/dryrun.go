package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// dryRunApply asks the member to apply obj as the controller would, with
// server-side apply under Fedwarden's field manager, forcing conflicts,
// with dryRun=All: admission, quota and validation run, nothing is stored.
func (p *planner) dryRunApply(ctx context.Context, in *planInput, member *clustercache.Member, obj *unstructured.Unstructured) *DryRun {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return &DryRun{Status: DryRunFailed, Message: fmt.Sprintf("encoding the copy: %v", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	opts := metav1.PatchOptions{FieldManager: propagation.FieldManager, Force: new(true), DryRun: []string{metav1.DryRunAll}}
	_, err = resource(in, member, obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, raw, opts)
	if propagation.IsNamespaceNotFound(err) {
		return &DryRun{Status: DryRunSkipped, Message: fmt.Sprintf("namespace %s does not exist in cluster %s yet: the controller creates it before the copy, "+
			"so the member cannot judge the copy before then", obj.GetNamespace(), member.Name)}
	}
	return answer(err, "applying", member.Name)
}

// dryRunDelete asks the member to delete live, as the controller would
// (only that very object: its UID), with dryRun=All.
func (p *planner) dryRunDelete(ctx context.Context, in *planInput, member *clustercache.Member, live *unstructured.Unstructured) *DryRun {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	uid := live.GetUID()
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, DryRun: []string{metav1.DryRunAll}}
	err := resource(in, member, live.GetNamespace()).Delete(ctx, live.GetName(), opts)
	return answer(err, "deleting", member.Name)
}

// answer is the member's answer to a dry run that returned err: allowed,
// refused (the member's API server said no: admission, quota, schema,
// rights), or failed (it could not be asked).
func answer(err error, what, cluster string) *DryRun {
	if err == nil {
		return &DryRun{Status: DryRunAllowed, Allowed: true}
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && refusal(status.Status().Code) {
		return &DryRun{Status: DryRunRefused, Message: err.Error(), answer: err}
	}
	return &DryRun{Status: DryRunFailed, Message: fmt.Sprintf("dry run of %s the copy in cluster %s: %v", what, cluster, err), answer: err}
}

// refusal tells whether an HTTP status code is the member saying no to the
// write, rather than failing to answer.
func refusal(code int32) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return code >= 400 && code < 500
}
