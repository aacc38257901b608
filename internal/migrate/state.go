package migrate

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// stateKey is the key of StateConfigMap's binaryData holding the state,
// gzipped JSON: the CRDs of federated kinds are large.
const stateKey = "state.json.gz"

// maxStateBytes keeps the state within what a ConfigMap may hold (1 MiB).
const maxStateBytes = 900 << 10

// state is what the handover removed or replaced, as it was: what
// Rollback puts back.
type state struct {
	// Replicas of KubeFed's controller-manager Deployment; nil when the
	// namespace has none.
	Replicas *int32 `json:"replicas,omitempty"`
	// Webhooks are KubeFed's webhook configurations.
	Webhooks []map[string]any `json:"webhooks,omitempty"`
	// CRDs are KubeFed's CRDs that the handover replaced.
	CRDs []map[string]any `json:"crds,omitempty"`
	// TypeConfigs are KubeFed's (namespaced) FederatedTypeConfigs.
	TypeConfigs []map[string]any `json:"typeConfigs,omitempty"`
	// Rejoined names the clusters given Fedwarden's own identity
	// (--rejoin), which Rollback leaves in place.
	Rejoined []string `json:"rejoined,omitempty"`
}

// stored returns obj as it is saved: without the fields the server sets.
func stored(obj map[string]any) map[string]any {
	u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	return u.Object
}

// saveState creates StateConfigMap holding st. It fails if the ConfigMap
// exists: a handover ran already, and its state is what Rollback needs.
func saveState(ctx context.Context, c client.Client, namespace string, st *state) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding the state: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return fmt.Errorf("compressing the state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compressing the state: %w", err)
	}
	if buf.Len() > maxStateBytes {
		return fmt.Errorf("the state to save is %d bytes compressed, more than a ConfigMap holds (%d)", buf.Len(), maxStateBytes)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: StateConfigMap, Namespace: namespace, Labels: map[string]string{LabelMigratedFrom: migratedFromKubeFed}},
		BinaryData: map[string][]byte{stateKey: buf.Bytes()},
	}
	err = c.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("ConfigMap %s/%s exists: a handover from KubeFed ran already on this host; "+
			"run 'fedwarden migrate kubefed --rollback' to put KubeFed back first", namespace, StateConfigMap)
	}
	if err != nil {
		return fmt.Errorf("saving the state in ConfigMap %s/%s: %w", namespace, StateConfigMap, err)
	}
	return nil
}

// loadState reads StateConfigMap; nil when there is none.
func loadState(ctx context.Context, c client.Client, namespace string) (*state, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: StateConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, StateConfigMap, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(cm.BinaryData[stateKey]))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: key %s: %w", namespace, StateConfigMap, stateKey, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: key %s: %w", namespace, StateConfigMap, stateKey, err)
	}
	st := &state{}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: key %s: %w", namespace, StateConfigMap, stateKey, err)
	}
	return st, nil
}
