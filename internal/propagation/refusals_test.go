package propagation

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

var gizmos = Type{
	Name:             "gizmos.example.com",
	Federated:        schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedGizmo"},
	Target:           schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gizmo"},
	TargetResource:   schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"},
	TargetNamespaced: true, FederatedNamespaced: true,
}

func TestServingFrom(t *testing.T) {
	t.Parallel()
	all := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	terminating := []string{"delete", "deletecollection", "get", "list", "watch"}
	list := func(verbs []string) *metav1.APIResourceList {
		return &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Verbs: all},
			{Name: "gizmos", Verbs: verbs},
			{Name: "gizmos/status", Verbs: []string{"get", "patch", "update"}},
		}}
	}
	tests := []struct {
		name string
		list *metav1.APIResourceList
		err  error
		want serving
	}{
		{"served", list(all), nil, served},
		{"its CRD being deleted", list(terminating), nil, beingRemoved},
		{"another kind of the group only", &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "widgets", Verbs: all}}}, nil, notServed},
		{"the group and version not served", &metav1.APIResourceList{}, apierrors.NewNotFound(schema.GroupResource{}, ""), notServed},
		{"discovery failing", &metav1.APIResourceList{}, errors.New("connection refused"), servingUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := servingFrom(tt.list, tt.err, "gizmos"); got != tt.want {
				t.Errorf("servingFrom = %v, want %v", got, tt.want)
			}
		})
	}
}

// A member that refuses a kind is reported as such, with what it said
// and what to do: not Unreachable, since it answers.
func TestRefused(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Group: "example.com", Resource: "gizmos"}
	forbidden := fmt.Errorf("listing gizmos.example.com in cluster east: %w",
		apierrors.NewForbidden(gr, "", errors.New(`User "system:serviceaccount:kube-federation-system:fedwarden-east" cannot list resource "gizmos"`)))
	notFound := fmt.Errorf("listing gizmos.example.com in cluster east: %w", apierrors.NewNotFound(gr, ""))
	tests := []struct {
		name       string
		err        error
		s          serving
		wantReason string
		want       []string
		notWant    []string
	}{
		{"forbidden, the kind served", forbidden, served, typesv1beta1.ClusterForbidden,
			[]string{"cluster east refuses Fedwarden access to gizmos.example.com: gizmos.example.com is forbidden: User", "run 'fedwarden join east' again"},
			[]string{"listing gizmos.example.com in cluster east"}},
		{"forbidden, discovery unknown", forbidden, servingUnknown, typesv1beta1.ClusterForbidden, []string{"refuses Fedwarden access"}, nil},
		// RBAC is checked before the kind is looked up: a kind the member
		// does not serve, and that Fedwarden was never granted, is forbidden.
		{"forbidden, the kind not served", forbidden, notServed, typesv1beta1.ClusterKindNotServed,
			[]string{"cluster east does not serve gizmos.example.com (version v1)", "CustomResourceDefinition is not installed there, or was removed", "'fedwarden join east' again"},
			[]string{"refuses"}},
		{"not found", notFound, servingUnknown, typesv1beta1.ClusterKindNotServed, []string{"cluster east does not serve gizmos.example.com"}, nil},
		{"not found, served since", notFound, served, typesv1beta1.ClusterKindNotServed, []string{"did not serve gizmos.example.com (version v1) when asked", "serves it now"}, nil},
		{"its CRD being deleted", nil, beingRemoved, typesv1beta1.ClusterKindNotServed, []string{"cluster east is removing gizmos.example.com (version v1): its CustomResourceDefinition is being deleted"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := refused("east", gizmos, tt.err, tt.s)
			if res.reason != tt.wantReason || res.state != typesv1beta1.ApplyFailed || !res.retry || res.name != "east" {
				t.Errorf("refused = %+v, want reason %s, state ApplyFailed, retried", res, tt.wantReason)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.message, w) {
					t.Errorf("message %q lacks %q", res.message, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(res.message, w) {
					t.Errorf("message %q holds %q", res.message, w)
				}
			}
			if len(res.message) > 1024 {
				t.Errorf("message of %d bytes, more than a CPV entry holds", len(res.message))
			}
		})
	}
}

// events records what recordFailures emits.
type events []string

func (e *events) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	*e = append(*e, eventtype+" "+reason+" "+fmt.Sprintf(note, args...))
}

func (e *events) AnnotatedEventf(obj, related runtime.Object, _ map[string]string, eventtype, reason, action, note string, args ...any) {
	e.Eventf(obj, related, eventtype, reason, action, note, args...)
}

// A refused kind raises one Warning Event naming the cluster and the
// cause, when the refusal is new or its cause changed; not at each retry.
func TestRefusalsRaiseAnEventOncePerChange(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Group: "example.com", Resource: "gizmos"}
	forbidden := refused("east", gizmos, apierrors.NewForbidden(gr, "", errors.New("no")), served)
	notServedRes := refused("east", gizmos, nil, notServed)
	entry := func(res clusterResult) typesv1beta1.ClusterVersion {
		return typesv1beta1.ClusterVersion{ClusterName: typesv1beta1.ClusterName(res.name), State: res.state, Message: bounded(res.message, 1024)}
	}
	tests := []struct {
		name     string
		previous map[string]typesv1beta1.ClusterVersion
		result   clusterResult
		want     string
	}{
		{"new", nil, forbidden, "Warning Forbidden cluster east: cluster east refuses Fedwarden access to gizmos.example.com"},
		{"the same again (a retry)", map[string]typesv1beta1.ClusterVersion{"east": entry(forbidden)}, forbidden, ""},
		{"after an outage", map[string]typesv1beta1.ClusterVersion{"east": {ClusterName: "east", State: typesv1beta1.Unreachable, Message: "cluster east is not Ready"}}, forbidden, "Warning Forbidden cluster east:"},
		{"another cause", map[string]typesv1beta1.ClusterVersion{"east": entry(forbidden)}, notServedRes, "Warning KindNotServed cluster east: cluster east does not serve gizmos.example.com"},
		{"the same cause again", map[string]typesv1beta1.ClusterVersion{"east": entry(notServedRes)}, notServedRes, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got events
			rep := &reporter{recorder: &got}
			in := &syncInput{previous: tt.previous}
			rep.recordFailures(&unstructured.Unstructured{}, in, []clusterResult{tt.result, inSync("west", nil)})
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("Events %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tt.want)):
				t.Errorf("Events %q, want one starting %q", got, tt.want)
			}
		})
	}
}

// A member's list and watch errors come in several types (a watch that
// ends, a list refused when the kind's CRD is deleted): recording one after
// another must not panic, as an atomic.Value would, in the reflector's
// goroutine, where it ended the controller-manager.
func TestMemberWatchRecordsErrorsOfAnyType(t *testing.T) {
	t.Parallel()
	var mw memberWatch
	gone := apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "gizmos"}, "")
	for _, err := range []error{errors.New("very short watch"), fmt.Errorf("failed to list: %w", gone), gone} {
		mw.noteError(err)
		if got := mw.listError(); got != err {
			t.Fatalf("listError = %v, want %v", got, err)
		}
	}
	if !apierrors.IsNotFound(mw.listError()) {
		t.Errorf("listError = %v, want the NotFound", mw.listError())
	}
}
