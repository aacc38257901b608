package controllermanager

import "testing"

// A replica's Lease is owned by its Pod only when the chart's downward API
// names that Pod, it is the replica, and it lives in the Lease's namespace.
func TestPodOwner(t *testing.T) {
	tests := []struct {
		name, pod, uid, namespace, identity string
		want                                bool
	}{
		{name: "the chart's replica", pod: "cm-0", uid: "u-1", namespace: "kube-federation-system", identity: "cm-0", want: true},
		{name: "no downward API", identity: "cm-0"},
		{name: "another --replica-name", pod: "cm-0", uid: "u-1", namespace: "kube-federation-system", identity: "replica-a"},
		{name: "another namespace", pod: "cm-0", uid: "u-1", namespace: "fedwarden", identity: "cm-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAME", tt.pod)
			t.Setenv("POD_UID", tt.uid)
			t.Setenv("POD_NAMESPACE", tt.namespace)
			got := podOwner("kube-federation-system", tt.identity)
			if (got != nil) != tt.want {
				t.Fatalf("owner %+v, want one: %v", got, tt.want)
			}
			if got != nil && (got.Kind != "Pod" || got.Name != tt.pod || string(got.UID) != tt.uid) {
				t.Errorf("owner %+v, want Pod %s (%s)", got, tt.pod, tt.uid)
			}
		})
	}
}
