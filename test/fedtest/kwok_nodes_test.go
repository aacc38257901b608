package fedtest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestKWOKNodeList: without WithKWOKNodes, one Node named KWOKNodeName with
// the default or WithKWOKAllocatable's resources; with it, the Nodes given,
// those without resources getting the default ones; names must be given
// and differ.
func TestKWOKNodeList(t *testing.T) {
	t.Parallel()
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("4")}
	big := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	tests := []struct {
		name    string
		opts    []KWOKOption
		want    []KWOKNode
		wantErr bool
	}{
		{"the default Node", nil, []KWOKNode{{Name: KWOKNodeName, Allocatable: big}}, false},
		{"the default Node, resources given", []KWOKOption{WithKWOKAllocatable(small)}, []KWOKNode{{Name: KWOKNodeName, Allocatable: small}}, false},
		{"Nodes given", []KWOKOption{WithKWOKNodes(KWOKNode{Name: "a", Allocatable: small}, KWOKNode{Name: "b"})},
			[]KWOKNode{{Name: "a", Allocatable: small}, {Name: "b", Allocatable: big}}, false},
		{"a Node without a name", []KWOKOption{WithKWOKNodes(KWOKNode{Allocatable: small})}, nil, true},
		{"a name twice", []KWOKOption{WithKWOKNodes(KWOKNode{Name: "a"}), WithKWOKNodes(KWOKNode{Name: "a"})}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := kwokOptions{allocatable: big}
			for _, opt := range tt.opts {
				opt(&o)
			}
			got, err := o.nodeList()
			if (err != nil) != tt.wantErr || !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("nodeList() = %v, %v; want %v (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
