package propagation

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestLastWrites(t *testing.T) {
	t.Parallel()
	obj := func(rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("shop")
		u.SetName("web")
		u.SetResourceVersion(rv)
		return u
	}
	var w lastWrites
	if w.lagging("a", obj("5"), "h2") {
		t.Error("lagging without any write recorded")
	}
	w.record("a", obj("7"), "h2")
	tests := []struct {
		name    string
		cluster string
		cached  string
		hash    string
		want    bool
	}{
		{"the informer has our write", "a", "7", "h2", false},
		{"the informer has an older copy", "a", "5", "h2", true},
		{"another content is wanted now", "a", "5", "h3", false},
		{"another cluster", "b", "5", "h2", false},
	}
	for _, tt := range tests {
		if got := w.lagging(tt.cluster, obj(tt.cached), tt.hash); got != tt.want {
			t.Errorf("%s: lagging = %v, want %v", tt.name, got, tt.want)
		}
	}
	w.forget("a", obj("7"))
	if w.lagging("a", obj("5"), "h2") {
		t.Error("lagging after forget")
	}
}

func TestEchoes(t *testing.T) {
	t.Parallel()
	obj := func(name, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("shop")
		u.SetName(name)
		u.SetResourceVersion(rv)
		return u
	}
	var w lastWrites
	w.record("a", obj("web", "7"), "h2")
	tests := []struct {
		name    string
		cluster string
		obj     *unstructured.Unstructured
		want    bool
	}{
		{"our write coming back", "a", obj("web", "7"), true},
		{"a later change by someone else", "a", obj("web", "8"), false},
		{"the copy before our write", "a", obj("web", "5"), false},
		{"the same object in another cluster", "b", obj("web", "7"), false},
		{"another object", "a", obj("api", "7"), false},
	}
	for _, tt := range tests {
		if got := w.echoes(tt.cluster, tt.obj); got != tt.want {
			t.Errorf("%s: echoes = %v, want %v", tt.name, got, tt.want)
		}
	}
	w.forget("a", obj("web", "7"))
	if w.echoes("a", obj("web", "7")) {
		t.Error("echoes after forget")
	}
}
