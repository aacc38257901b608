// Package rollout decides, for a federated resource whose spec.rollout is
// Waves, which revision each placed cluster is to have: the waves its
// clusters fall in, and how far the rollout of the latest revision got.
package rollout

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Wave is a wave of a rollout with the placed clusters it chose.
type Wave struct {
	Name     string
	Clusters []string
	// Spec is the wave as spec.rollout.waves has it; the zero Wave for the
	// implicit last one.
	Spec typesv1beta1.Wave
}

// WaveName is the name of wave i: its own, or wave-<i>.
func WaveName(w typesv1beta1.Wave, i int) string {
	if w.Name != "" {
		return w.Name
	}
	return fmt.Sprintf("wave-%d", i)
}

// Waves assigns the placed clusters to r's waves, in order: a cluster goes
// to the first wave that names it or whose selector matches its
// FederatedCluster's labels; the placed clusters no wave chooses form an
// implicit last wave, "rest". Clusters are sorted by name within a wave;
// waves that choose no placed cluster are kept (they pass at once). A
// selector that does not parse is an error.
func Waves(r *typesv1beta1.Rollout, placed []string, clusters []corev1beta1.FederatedCluster) ([]Wave, error) {
	byName := map[string]*corev1beta1.FederatedCluster{}
	for i := range clusters {
		byName[clusters[i].Name] = &clusters[i]
	}
	taken := map[string]bool{}
	var waves []Wave
	for i, spec := range r.Waves {
		sel := labels.Nothing()
		if spec.ClusterSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(spec.ClusterSelector)
			if err != nil {
				return nil, fmt.Errorf("spec.rollout.waves[%d].clusterSelector: %w", i, err)
			}
			sel = s
		}
		w := Wave{Name: WaveName(spec, i), Spec: spec}
		for _, name := range placed {
			if taken[name] {
				continue
			}
			fc := byName[name]
			named := slices.Contains(spec.Clusters, typesv1beta1.ClusterName(name))
			if named || (fc != nil && sel.Matches(labels.Set(fc.Labels))) {
				w.Clusters = append(w.Clusters, name)
				taken[name] = true
			}
		}
		slices.Sort(w.Clusters)
		waves = append(waves, w)
	}
	rest := Wave{Name: "rest"}
	for _, name := range placed {
		if !taken[name] {
			rest.Clusters = append(rest.Clusters, name)
		}
	}
	if len(rest.Clusters) > 0 {
		slices.Sort(rest.Clusters)
		waves = append(waves, rest)
	}
	return waves, nil
}

// WaveOf returns the index of the wave cluster is in, or -1.
func WaveOf(waves []Wave, cluster string) int {
	for i, w := range waves {
		if slices.Contains(w.Clusters, cluster) {
			return i
		}
	}
	return -1
}
