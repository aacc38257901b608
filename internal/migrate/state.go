package migrate

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StateSecret is the Secret of the control-plane namespace in which the
// handover saves what it removes or replaces, and Rollback reads it. A
// Secret, as Helm keeps its releases in Secrets: where the state is, fewer
// identities may write than ConfigMaps. Its digest, which the handover
// prints, binds it to that handover all the same.
const StateSecret = "fedwarden-migrate-kubefed"

// LegacyStateConfigMap is where Fedwarden kept the state before it moved
// to StateSecret: Rollback still reads it, under the same checks, with the
// digest that --rollback --dry-run prints, since that version printed none.
const LegacyStateConfigMap = "fedwarden-migrate-kubefed"

// stateSecretType is StateSecret's type.
const stateSecretType corev1.SecretType = "fedwarden.io/migrate-kubefed-state"

// stateKey is the key of StateSecret's data (and LegacyStateConfigMap's
// binaryData) holding the state, gzipped JSON: the CRDs of federated
// kinds are large.
const stateKey = "state.json.gz"

// maxStateBytes keeps the state within what a Secret may hold (1 MiB).
const maxStateBytes = 900 << 10

// digestPrefix starts a state's digest.
const digestPrefix = "sha256:"

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

// digest is the digest of a state as saved: of its JSON, before it is
// compressed.
func digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return digestPrefix + hex.EncodeToString(sum[:])
}

// stateExistsError is the error of a handover that finds a state saved
// already, where: it says how to check that state before anyone rolls it
// back, rather than sending the admin to run --rollback on it.
func stateExistsError(where string) error {
	return fmt.Errorf("%s exists: a handover from KubeFed ran already on this host, or someone wrote it; nothing was changed. "+
		"'fedwarden migrate kubefed --rollback --dry-run' lists every object it would restore and its digest: "+
		"if it is the state your handover saved (its digest is the one that handover printed), "+
		"'fedwarden migrate kubefed --rollback --state-digest DIGEST' puts KubeFed back; if it is not, delete it", where)
}

// checkNoState fails when a state is saved already, in StateSecret or in
// LegacyStateConfigMap.
func checkNoState(ctx context.Context, c client.Client, namespace string) error {
	saved, err := loadState(ctx, c, namespace)
	if err != nil {
		return err
	}
	if saved != nil {
		return stateExistsError(saved.source)
	}
	return nil
}

// saveState creates StateSecret holding st and returns its digest. It
// fails if a state is saved already: a handover ran, and its state is
// what Rollback needs.
func saveState(ctx context.Context, c client.Client, namespace string, st *state) (string, error) {
	if err := checkNoState(ctx, c, namespace); err != nil {
		return "", err
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encoding the state: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return "", fmt.Errorf("compressing the state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("compressing the state: %w", err)
	}
	if buf.Len() > maxStateBytes {
		return "", fmt.Errorf("the state to save is %d bytes compressed, more than a Secret holds (%d)", buf.Len(), maxStateBytes)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: StateSecret, Namespace: namespace, Labels: map[string]string{LabelMigratedFrom: migratedFromKubeFed}},
		Type:       stateSecretType,
		Data:       map[string][]byte{stateKey: buf.Bytes()},
	}
	err = c.Create(ctx, secret)
	if apierrors.IsAlreadyExists(err) {
		return "", stateExistsError(stateSecretName(namespace))
	}
	if err != nil {
		return "", fmt.Errorf("saving the state in %s: %w", stateSecretName(namespace), err)
	}
	return digest(raw), nil
}

func stateSecretName(namespace string) string {
	return "Secret " + namespace + "/" + StateSecret
}

func legacyStateName(namespace string) string {
	return "ConfigMap " + namespace + "/" + LegacyStateConfigMap
}

// savedState is a state as Rollback finds it.
type savedState struct {
	st *state
	// source names the object holding it: StateSecret, or
	// LegacyStateConfigMap.
	source string
	// legacy is set for LegacyStateConfigMap.
	legacy bool
	// digest is the digest of its JSON.
	digest string
	// obj is the object holding it, which Rollback deletes.
	obj client.Object
}

// loadState reads StateSecret, else LegacyStateConfigMap; nil when
// neither exists. It decodes the state without judging what it holds.
func loadState(ctx context.Context, c client.Client, namespace string) (*savedState, error) {
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: StateSecret}, secret)
	switch {
	case err == nil:
		return decodeState(stateSecretName(namespace), secret.Data[stateKey], secret, false)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading %s: %w", stateSecretName(namespace), err)
	}
	cm := &corev1.ConfigMap{}
	err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: LegacyStateConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", legacyStateName(namespace), err)
	}
	return decodeState(legacyStateName(namespace), cm.BinaryData[stateKey], cm, true)
}

// decodeState decodes the gzipped JSON of a state. A field no handover
// writes is refused: nothing of the state goes unread.
func decodeState(source string, data []byte, obj client.Object, legacy bool) (*savedState, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: key %s: %w", source, stateKey, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: key %s: %w", source, stateKey, err)
	}
	st := &state{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(st); err != nil {
		return nil, fmt.Errorf("%s: key %s: not a state a handover saves: %w; nothing was restored", source, stateKey, err)
	}
	return &savedState{st: st, source: source, legacy: legacy, digest: digest(raw), obj: obj}, nil
}
