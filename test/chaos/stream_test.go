package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// stream changes the templates and overrides of a few FederatedConfigMaps,
// one change at a time, and tells when each member saw each change. Every
// change sets a sequence number in the copies' data: tseq in the template,
// oseq through each cluster's override, so that a copy that skipped
// straight to a later change counts as having seen the earlier ones.
type stream struct {
	b         *bed
	namespace string
	names     []string
	clusters  []string
	mu        sync.Mutex
	changes   []change
}

// change is one write of a federated resource.
type change struct {
	seq      int
	name     string
	template bool
	at       time.Time
}

// streamConfigMap is the FederatedConfigMap name of a stream at template
// sequence tseq and override sequence oseq.
func (s *stream) object(name string, tseq, oseq int) *unstructured.Unstructured {
	obj := federatedConfigMap(s.namespace, name, s.clusters, nil)
	_ = unstructured.SetNestedStringMap(obj.Object, map[string]string{"greeting": "hello", "cluster": "unset", "tseq": strconv.Itoa(tseq), "oseq": "unset"}, "spec", "template", "data")
	var overrides []any
	for _, c := range s.clusters {
		overrides = append(overrides, map[string]any{"clusterName": c, "clusterOverrides": []any{
			map[string]any{"path": "/data/cluster", "value": c},
			map[string]any{"path": "/data/oseq", "value": strconv.Itoa(oseq)},
		}})
	}
	_ = unstructured.SetNestedSlice(obj.Object, overrides, "spec", "overrides")
	return obj
}

// newStream creates count FederatedConfigMaps on every member of b at
// sequence 0.
func newStream(t *testing.T, b *bed, namespace string, count int) *stream {
	s := &stream{b: b, namespace: namespace}
	for _, m := range b.Members {
		s.clusters = append(s.clusters, m.Name)
	}
	var objs []*unstructured.Unstructured
	for i := range count {
		name := fmt.Sprintf("stream-%02d", i)
		s.names = append(s.names, name)
		objs = append(objs, s.object(name, 0, 0))
	}
	if err := createAll(t.Context(), b.host, objs, 4); err != nil {
		t.Fatal(err)
	}
	return s
}

// next makes change number seq: a template change when seq is even, an
// override change (of every cluster) when it is odd, to resource seq modulo
// the number of resources. It patches only what it changes.
func (s *stream) next(ctx context.Context, seq int) error {
	name := s.names[seq%len(s.names)]
	c := change{seq: seq, name: name, template: seq%2 == 0}
	var patch map[string]any
	if c.template {
		patch = map[string]any{"spec": map[string]any{"template": map[string]any{"data": map[string]any{"tseq": strconv.Itoa(seq)}}}}
	} else {
		overrides, _, _ := unstructured.NestedSlice(s.object(name, 0, seq).Object, "spec", "overrides")
		patch = map[string]any{"spec": map[string]any{"overrides": overrides}}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	obj := federatedConfigMap(s.namespace, name, nil, nil)
	if err := s.b.host.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("change %d of %s: %w", seq, name, err)
	}
	c.at = time.Now()
	s.mu.Lock()
	s.changes = append(s.changes, c)
	s.mu.Unlock()
	return nil
}

// run makes changes from..to-1, one every interval.
func (s *stream) run(ctx context.Context, from, to int, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for seq := from; seq < to; seq++ {
		if err := s.next(ctx, seq); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// latencies returns, for cluster, how long each of the changes from..to-1
// took to reach its copy (seen by the WriteLog), and the changes not seen.
func (s *stream) latencies(w *WriteLog, cluster string, from, to int) (lat []time.Duration, missing []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.changes {
		if c.seq < from || c.seq >= to {
			continue
		}
		key := "oseq"
		if c.template {
			key = "tseq"
		}
		seen := false
		for _, wr := range w.Of(cluster, c.name) {
			v, _, _ := unstructured.NestedString(wr.Object.Object, "data", key)
			if n, err := strconv.Atoi(v); err == nil && n >= c.seq {
				lat = append(lat, max(0, wr.At.Sub(c.at)))
				seen = true
				break
			}
		}
		if !seen {
			missing = append(missing, c.seq)
		}
	}
	return lat, missing
}

// summary formats latencies as median, 95th percentile and maximum.
func summary(lat []time.Duration) string {
	if len(lat) == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %s, p95 %s, max %s (%d changes)", fedtest.Percentile(lat, 0.5).Round(time.Millisecond),
		fedtest.Percentile(lat, 0.95).Round(time.Millisecond), fedtest.Percentile(lat, 1).Round(time.Millisecond), len(lat))
}

// applies returns the apply writes the running controller-manager counted
// to cluster.
func (b *bed) applies(t *testing.T, cluster string) float64 {
	t.Helper()
	v, _, err := b.cm.Sum(t.Context(), "fedwarden_member_writes_total", fmt.Sprintf("cluster=%q", cluster), `verb="apply"`)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// readyStatus returns the status of cluster's Ready condition.
func (b *bed) readyStatus(ctx context.Context, cluster string) (string, error) {
	fc := &corev1beta1.FederatedCluster{}
	if err := b.host.Get(ctx, client.ObjectKey{Name: cluster}, fc); err != nil {
		return "", err
	}
	if c := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady); c != nil {
		return string(c.Status), nil
	}
	return "Unknown", nil
}
