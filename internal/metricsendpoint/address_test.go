package metricsendpoint

import "testing"

func TestDefaultAddress(t *testing.T) {
	for _, c := range []struct {
		inPod bool
		want  string
	}{
		{inPod: true, want: ":8080"},
		{inPod: false, want: "127.0.0.1:8080"},
	} {
		if got := defaultAddress(8080, c.inPod); got != c.want {
			t.Errorf("in a pod %t: %q, want %q", c.inPod, got, c.want)
		}
	}
}

func TestDefaultAddressReadsTheKubeletsVariable(t *testing.T) {
	t.Setenv(inPodEnv, "")
	if got := DefaultAddress(8081); got != "127.0.0.1:8081" {
		t.Errorf("outside a pod: %q, want 127.0.0.1:8081", got)
	}
	t.Setenv(inPodEnv, "10.96.0.1")
	if got := DefaultAddress(8081); got != ":8081" {
		t.Errorf("in a pod: %q, want :8081", got)
	}
}
