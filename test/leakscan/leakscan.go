// Package leakscan checks, for the end-to-end tests, the safety contract's
// promise that no secret leaves. A Scanner learns the secret values a test
// run creates, every Secret's data in the clusters it watches and the tokens
// tests mint, and looks for them where nobody is meant to read them: the
// logs of Fedwarden's processes, the Events of every namespace, and the
// status of FederatedClusters, FederatedTypeConfigs,
// ClusterPropagatedVersions and federated resources.
//
// It watches rather than lists at the end: tests delete their namespaces,
// and their test beds, when they end, and what was there then is gone.
//
// # What is a secret value
//
// Each value of a Secret's data, decoded, and each token a test mints. Not:
//   - values shorter than MinLength bytes, which any text holds by chance
//     (they are counted, and the report says how many were left out);
//   - certificates (PEM with only CERTIFICATE blocks, such as ca.crt),
//     which are public, and are rightly copied into FederatedClusters;
//   - the namespace key of a ServiceAccount token Secret, which is the
//     namespace's name.
//
// A value is found as written, base64-encoded (as a Secret's data is in
// JSON) and JSON-escaped (as a structured log writes it).
package leakscan

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// MinLength is the length under which a secret value is not looked for:
// shorter strings turn up in any text by chance.
const MinLength = 8

// Scanner collects secret values and the places they must not reach, and
// finds the former in the latter. It is safe for concurrent use.
type Scanner struct {
	dir string // where kept logs are copied

	mu sync.Mutex
	// secrets are the values to look for, each with where it comes from
	// (never the value itself).
	secrets map[string]string
	// short are the values left out as shorter than MinLength.
	short map[string]bool
	// canaries are values planted on purpose where they must be found
	// (Canary).
	canaries map[string]bool
	// texts are the strings read in the API, each with where it was first
	// seen.
	texts map[string]string
	// logs are the logs to scan, by name: the path of the kept copy, or of
	// the log itself until it is kept.
	logs      map[string]logFile
	keptCount int
	// clusters names the clusters watched, for the summary.
	clusters []string
}

type logFile struct {
	path string
	kept bool
}

// New returns a Scanner that copies the logs it keeps into dir.
func New(dir string) *Scanner {
	return &Scanner{dir: dir, secrets: map[string]string{}, short: map[string]bool{}, canaries: map[string]bool{}, texts: map[string]string{}, logs: map[string]logFile{}}
}

// AddSecret adds a secret value; origin says where it comes from, as a
// report names it ("Secret ns/name key token in cluster host").
func (s *Scanner) AddSecret(origin string, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addSecret(origin, value)
}

func (s *Scanner) addSecret(origin string, value []byte) {
	v := string(value)
	switch {
	case len(v) < MinLength:
		if v != "" {
			s.short[v] = true
		}
	case isCertificate(value):
	default:
		if _, ok := s.secrets[v]; !ok {
			s.secrets[v] = origin
		}
	}
}

// Canary marks value, a secret value that a test planted on purpose where
// the scan must find it, to prove the scan sees what it should: its leaks
// are reported with Canary set. value must be at least MinLength bytes.
func (s *Scanner) Canary(value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.canaries[string(value)] = true
}

// Sees tells whether the scanner knows value as a secret and has read it in
// the API, for a test that plants one and must not end (and delete it)
// before the watches have seen both.
func (s *Scanner) Sees(value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.secrets[value]; !ok {
		return false
	}
	for text := range s.texts {
		if strings.Contains(text, value) {
			return true
		}
	}
	return false
}

// isCertificate tells whether data is PEM holding only certificates.
func isCertificate(data []byte) bool {
	found := false
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return found && strings.TrimSpace(string(data)) == ""
		}
		if block.Type != "CERTIFICATE" {
			return false
		}
		found = true
	}
}

// AddLog registers a log to scan, by name. The file is read at the end,
// unless Keep copies it before.
func (s *Scanner) AddLog(name, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs[name] = logFile{path: path}
}

// Keep copies the log registered as name now, for a log whose directory
// goes before the scan: a test's.
func (s *Scanner) Keep(name string) error {
	s.mu.Lock()
	l, ok := s.logs[name]
	s.keptCount++
	kept := filepath.Join(s.dir, fmt.Sprintf("%d-%s", s.keptCount, filepath.Base(l.path)))
	s.mu.Unlock()
	if !ok || l.kept {
		return nil
	}
	if err := copyFile(l.path, kept); err != nil {
		return fmt.Errorf("keeping the log %s for the leak scan: %w", name, err)
	}
	s.mu.Lock()
	s.logs[name] = logFile{path: kept, kept: true}
	s.mu.Unlock()
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// addText records a string read in the API at place.
func (s *Scanner) addText(place string, text string) {
	if len(text) < MinLength {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.texts[text]; !ok {
		s.texts[text] = place
	}
}

// Leak is a secret value found where it must not be.
type Leak struct {
	// Secret says whose value it is, and in what form it was found;
	// Origin only whose value it is.
	Secret, Origin string
	// Place says where it was found.
	Place string
	// Canary tells a value planted on purpose (Scanner.Canary).
	Canary bool
}

func (l Leak) String() string { return l.Place + " holds " + l.Secret }

// Summary says what a scan covered.
type Summary struct {
	Secrets, Short, Logs, Texts int
	LogBytes                    int64
	Clusters                    []string
	// Origins say where the values looked for come from, sorted.
	Origins []string
	// Canaries is how many values were planted on purpose.
	Canaries int
}

func (s Summary) String() string {
	return fmt.Sprintf("looked for %d secret values (%d shorter than %d bytes left out: they would match by chance) in %d logs (%d bytes) "+
		"and %d distinct strings of Events and statuses read from clusters %s", s.Secrets, s.Short, MinLength, s.Logs, s.LogBytes, s.Texts, strings.Join(s.Clusters, ", "))
}

// Scan looks for every secret value in every log and every string read
// from the API. It reports the leaks, what it covered, and the logs it
// could not read.
func (s *Scanner) Scan() ([]Leak, Summary, error) {
	s.mu.Lock()
	m := newMatcher(s.secrets)
	texts := make(map[string]string, len(s.texts))
	for k, v := range s.texts {
		texts[k] = v
	}
	logs := make(map[string]logFile, len(s.logs))
	for k, v := range s.logs {
		logs[k] = v
	}
	sum := Summary{Secrets: len(s.secrets), Short: len(s.short), Logs: len(s.logs), Texts: len(s.texts), Clusters: slices.Clone(s.clusters), Canaries: len(s.canaries)}
	for _, origin := range s.secrets {
		sum.Origins = append(sum.Origins, origin)
	}
	slices.Sort(sum.Origins)
	canary := map[string]bool{}
	for v := range s.canaries {
		canary[s.secrets[v]] = true
	}
	s.mu.Unlock()

	seen := map[Leak]bool{}
	var leaks []Leak
	report := func(place string) func(pattern) {
		return func(p pattern) {
			l := Leak{Secret: p.secret, Origin: p.origin, Place: place, Canary: canary[p.origin]}
			if !seen[l] {
				seen[l] = true
				leaks = append(leaks, l)
			}
		}
	}
	var errs []error
	for _, name := range sortedKeys(logs) {
		data, err := os.ReadFile(logs[name].path)
		if err != nil {
			errs = append(errs, fmt.Errorf("the log %s could not be scanned: %w (was its process stopped before its directory was removed?)", name, err))
			continue
		}
		sum.LogBytes += int64(len(data))
		m.find(string(data), report("the log "+name))
	}
	for _, text := range sortedKeys(texts) {
		m.find(text, report(texts[text]))
	}
	slices.SortFunc(leaks, func(a, b Leak) int { return strings.Compare(a.String(), b.String()) })
	return leaks, sum, errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// matcher finds any of many secret values in a text in one pass: the
// values are indexed by their first MinLength bytes.
type matcher map[string][]pattern

type pattern struct {
	text string
	// origin names the value: "the value of Secret ns/name key k in
	// cluster host"; secret names it and the form: "..., base64-encoded".
	origin, secret string
}

func newMatcher(secrets map[string]string) matcher {
	m := matcher{}
	for value, origin := range secrets {
		forms := map[string]string{value: origin, base64.StdEncoding.EncodeToString([]byte(value)): origin + ", base64-encoded"}
		if quoted, err := json.Marshal(value); err == nil {
			if escaped := string(quoted[1 : len(quoted)-1]); escaped != value {
				forms[escaped] = origin + ", JSON-escaped"
			}
		}
		for text, secret := range forms {
			key := text[:MinLength]
			m[key] = append(m[key], pattern{text: text, origin: origin, secret: secret})
		}
	}
	return m
}

// find calls found with every secret value text holds.
func (m matcher) find(text string, found func(pattern)) {
	for i := 0; i+MinLength <= len(text); i++ {
		for _, p := range m[text[i:i+MinLength]] {
			if strings.HasPrefix(text[i:], p.text) {
				found(p)
			}
		}
	}
}

// Watch watches the cluster name at cfg until the returned stop is
// called: its Secrets, whose values it adds, its Events, and, where the
// cluster serves them, FederatedClusters, FederatedTypeConfigs,
// ClusterPropagatedVersions and the federated resources of every type a
// FederatedTypeConfig enables, whose status it reads. The key of cfg's
// client certificate is a secret too.
func (s *Scanner) Watch(name string, cfg *rest.Config) (stop func(), err error) {
	if len(cfg.KeyData) > 0 {
		s.AddSecret("the client key of the admin of cluster "+name, cfg.KeyData)
	}
	if cfg.BearerToken != "" {
		s.AddSecret("the token of the admin of cluster "+name, []byte(cfg.BearerToken))
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("watching cluster %s for the leak scan: %w", name, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("watching cluster %s for the leak scan: %w", name, err)
	}
	w := &watcher{scanner: s, cluster: name, factory: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0), stop: make(chan struct{}), started: map[schema.GroupVersionResource]bool{}}
	w.watch(corev1.SchemeGroupVersion.WithResource("secrets"), w.secret)
	w.watch(corev1.SchemeGroupVersion.WithResource("events"), w.everything)
	for _, r := range []struct {
		gvr    schema.GroupVersionResource
		handle func(*unstructured.Unstructured)
	}{
		{schema.GroupVersionResource{Group: "core.kubefed.io", Version: "v1beta1", Resource: "federatedclusters"}, w.status},
		{schema.GroupVersionResource{Group: "core.kubefed.io", Version: "v1beta1", Resource: "federatedtypeconfigs"}, w.typeConfig},
		{schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "clusterpropagatedversions"}, w.status},
	} {
		if served(disco, r.gvr) {
			w.watch(r.gvr, r.handle)
		}
	}
	s.mu.Lock()
	if !slices.Contains(s.clusters, name) {
		s.clusters = append(s.clusters, name)
	}
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(w.stop)
			w.factory.Shutdown()
		})
	}, nil
}

// served tells whether the cluster serves gvr.
func served(disco discovery.DiscoveryInterface, gvr schema.GroupVersionResource) bool {
	list, err := disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource })
}

// watcher runs the informers of one cluster.
type watcher struct {
	scanner *Scanner
	cluster string
	factory dynamicinformer.DynamicSharedInformerFactory
	stop    chan struct{}

	mu      sync.Mutex
	started map[schema.GroupVersionResource]bool
}

// watch starts an informer of gvr, once, calling handle with each object
// added or updated.
func (w *watcher) watch(gvr schema.GroupVersionResource, handle func(*unstructured.Unstructured)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[gvr] {
		return
	}
	select {
	case <-w.stop:
		return
	default:
	}
	w.started[gvr] = true
	informer := w.factory.ForResource(gvr).Informer()
	// A cluster a test stops or restarts is not an error of the scan: the
	// informer lists again when it is back.
	_ = informer.SetWatchErrorHandler(func(*cache.Reflector, error) {})
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(handle, obj) },
		UpdateFunc: func(_, obj any) { call(handle, obj) },
	})
	w.factory.Start(w.stop)
}

func call(handle func(*unstructured.Unstructured), obj any) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		handle(u)
	}
}

// where names an object of the cluster in a report.
func (w *watcher) where(u *unstructured.Unstructured, part string) string {
	name := u.GetName()
	if u.GetNamespace() != "" {
		name = u.GetNamespace() + "/" + name
	}
	return fmt.Sprintf("%s %s %s in cluster %s", part, u.GetKind(), name, w.cluster)
}

// secret adds the values of a Secret.
func (w *watcher) secret(u *unstructured.Unstructured) {
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	serviceAccountToken := u.Object["type"] == string(corev1.SecretTypeServiceAccountToken)
	w.scanner.mu.Lock()
	defer w.scanner.mu.Unlock()
	for key, encoded := range data {
		if serviceAccountToken && key == corev1.ServiceAccountNamespaceKey {
			continue
		}
		value, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			value = []byte(encoded)
		}
		w.scanner.addSecret(fmt.Sprintf("the value of Secret %s/%s key %s in cluster %s", u.GetNamespace(), u.GetName(), key, w.cluster), value)
	}
}

// everything records every string of an object but its managed fields: an
// Event's.
func (w *watcher) everything(u *unstructured.Unstructured) {
	obj := u.DeepCopy().Object
	unstructured.RemoveNestedField(obj, "metadata", "managedFields")
	w.texts(w.where(u, "the"), obj)
}

// status records every string of an object's status.
func (w *watcher) status(u *unstructured.Unstructured) {
	w.texts(w.where(u, "the status of"), u.Object["status"])
}

// typeConfig records a FederatedTypeConfig's status, and watches the
// federated resources of its type.
func (w *watcher) typeConfig(u *unstructured.Unstructured) {
	w.status(u)
	group, _, _ := unstructured.NestedString(u.Object, "spec", "federatedType", "group")
	version, _, _ := unstructured.NestedString(u.Object, "spec", "federatedType", "version")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "federatedType", "pluralName")
	target, _, _ := unstructured.NestedString(u.Object, "spec", "targetType", "kind")
	targetGroup, _, _ := unstructured.NestedString(u.Object, "spec", "targetType", "group")
	if version == "" || plural == "" {
		return
	}
	handle := w.status
	if target == "Secret" && targetGroup == "" {
		handle = w.federatedSecret
	}
	w.watch(schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, handle)
}

// federatedSecret adds the values a FederatedSecret holds in its template
// and overrides, and records its status.
func (w *watcher) federatedSecret(u *unstructured.Unstructured) {
	w.status(u)
	origin := func(what string) string {
		return fmt.Sprintf("the value of %s of %s %s/%s in cluster %s", what, u.GetKind(), u.GetNamespace(), u.GetName(), w.cluster)
	}
	w.scanner.mu.Lock()
	defer w.scanner.mu.Unlock()
	for _, field := range []string{"data", "stringData"} {
		values, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", field)
		for key, v := range values {
			w.scanner.addSecret(origin(fmt.Sprintf("spec.template.%s key %s", field, key)), secretBytes(field, v))
		}
	}
	overrides, _, _ := unstructured.NestedSlice(u.Object, "spec", "overrides")
	for _, o := range overrides {
		cluster, _ := o.(map[string]any)
		patches, _ := cluster["clusterOverrides"].([]any)
		for _, p := range patches {
			patch, _ := p.(map[string]any)
			path, _ := patch["path"].(string)
			field := strings.Split(strings.TrimPrefix(path, "/"), "/")[0]
			if field != "data" && field != "stringData" {
				continue
			}
			for key, v := range overrideValues(path, patch["value"]) {
				w.scanner.addSecret(origin(fmt.Sprintf("the override of %s for cluster %v, key %s", path, cluster["clusterName"], key)), secretBytes(field, v))
			}
		}
	}
}

// overrideValues returns the values an override of path sets: a map under
// /data, one value under /data/KEY.
func overrideValues(path string, value any) map[string]string {
	out := map[string]string{}
	switch v := value.(type) {
	case string:
		out[path] = v
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok {
				out[k] = s
			}
		}
	}
	return out
}

// secretBytes returns the bytes a value of a Secret's field stands for.
func secretBytes(field, v string) []byte {
	if field == "data" {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			return b
		}
	}
	return []byte(v)
}

// texts records every string under v at place.
func (w *watcher) texts(place string, v any) {
	switch x := v.(type) {
	case string:
		w.scanner.addText(place, x)
	case map[string]any:
		for _, e := range x {
			w.texts(place, e)
		}
	case []any:
		for _, e := range x {
			w.texts(place, e)
		}
	}
}
