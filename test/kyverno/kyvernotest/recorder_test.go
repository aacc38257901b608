package kyvernotest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRecorderHold(t *testing.T) {
	t.Parallel()
	version := func(name, value string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		u.SetAnnotations(map[string]string{"k": value})
		return u
	}
	stays := func(u *unstructured.Unstructured) bool { return u.GetAnnotations()["k"] == "a" }
	tests := []struct {
		name     string
		recorded []*unstructured.Unstructured // before Hold
		from     int
		later    []*unstructured.Unstructured // while Hold watches
		window   time.Duration
		wantErr  bool
	}{
		{name: "nothing changes", recorded: []*unstructured.Unstructured{version("web", "a")}, window: 50 * time.Millisecond},
		{name: "versions as they should stay", later: []*unstructured.Unstructured{version("web", "a"), version("web", "a")}, window: time.Second},
		{name: "a change before from", recorded: []*unstructured.Unstructured{version("web", "b"), version("web", "a")}, from: 1, window: 50 * time.Millisecond},
		{name: "another object changes", later: []*unstructured.Unstructured{version("other", "b")}, window: time.Second},
		{name: "a change recorded", recorded: []*unstructured.Unstructured{version("web", "a"), version("web", "b")}, window: 0, wantErr: true},
		{name: "a change within the window", later: []*unstructured.Unstructured{version("web", "a"), version("web", "b")}, window: time.Minute, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &Recorder{changed: make(chan struct{})}
			for _, v := range tt.recorded {
				r.observe(v)
			}
			go func() {
				for _, v := range tt.later {
					r.observe(v)
				}
			}()
			begin := time.Now()
			err := r.Hold(context.Background(), "web", tt.from, tt.window, stays)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Hold: %v, want an error: %v", err, tt.wantErr)
			}
			if err == nil && time.Since(begin) < tt.window {
				t.Errorf("Hold returned after %s, before the window of %s ended", time.Since(begin), tt.window)
			}
			if err != nil && tt.window == time.Minute && time.Since(begin) > 30*time.Second {
				t.Errorf("Hold took %s to see the change", time.Since(begin))
			}
		})
	}
}
