// Package dependencies finds the objects a workload's pod template needs
// in its namespace: the ConfigMaps and Secrets it mounts or reads, the
// Secrets it pulls images with, its ServiceAccount and its
// PersistentVolumeClaims. It only reads a template; what is done with the
// objects it names is the caller's.
package dependencies

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kinds of the objects a pod template can name.
const (
	ConfigMap             = "ConfigMap"
	Secret                = "Secret"
	ServiceAccount        = "ServiceAccount"
	PersistentVolumeClaim = "PersistentVolumeClaim"
)

// defaultServiceAccount is the ServiceAccount every namespace has, which
// is never a dependency.
const defaultServiceAccount = "default"

// Ref is one object a pod template names, with every place that names it.
type Ref struct {
	// Kind is ConfigMap, Secret, ServiceAccount or PersistentVolumeClaim
	// (all of the core group).
	Kind string
	Name string
	// Optional is true when every place that names the object marks it
	// optional: a Pod starts without it.
	Optional bool
	// From says where the template names it, such as "volume config" or
	// "container web env DB_PASSWORD".
	From []string
}

// podSpecPaths are, by target kind (group and kind), where its pod spec is.
var podSpecPaths = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:        {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:    {"spec", "jobTemplate", "spec", "template", "spec"},
	{Group: "", Kind: "Pod"}:             {"spec"},
}

// HasPodTemplate tells whether objects of kind gk carry a pod template
// Find can read.
func HasPodTemplate(gk schema.GroupKind) bool {
	_, ok := podSpecPaths[gk]
	return ok
}

// Find returns the objects the pod template of obj, an object of kind gk
// as a JSON map, names: sorted by kind and name, each once. A kind without
// a pod template names none; a template that is not a pod spec is an
// error.
func Find(gk schema.GroupKind, obj map[string]any) ([]Ref, error) {
	path, ok := podSpecPaths[gk]
	if !ok {
		return nil, nil
	}
	raw, found, err := nestedMap(obj, path)
	if err != nil || !found {
		return nil, err
	}
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return nil, fmt.Errorf("reading the pod template of %s: %w", gk.Kind, err)
	}
	f := &finder{}
	f.podSpec(spec)
	return f.refs(), nil
}

// nestedMap returns the map at path in obj; found is false when a field
// on the way is missing.
func nestedMap(obj map[string]any, path []string) (map[string]any, bool, error) {
	cur := obj
	for i, field := range path {
		v, ok := cur[field]
		if !ok || v == nil {
			return nil, false, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf(".%s is a %T, not an object", strings.Join(path[:i+1], "."), v)
		}
		cur = m
	}
	return cur, true, nil
}

// finder collects the references of one pod spec.
type finder struct {
	found []Ref
}

// add records that from names kind/name, optionally or not.
func (f *finder) add(kind, name string, optional bool, from string) {
	if name == "" {
		return
	}
	i := slices.IndexFunc(f.found, func(r Ref) bool { return r.Kind == kind && r.Name == name })
	if i < 0 {
		f.found = append(f.found, Ref{Kind: kind, Name: name, Optional: optional})
		i = len(f.found) - 1
	}
	r := &f.found[i]
	r.Optional = r.Optional && optional
	if !slices.Contains(r.From, from) {
		r.From = append(r.From, from)
	}
}

// refs returns what was found, sorted by kind and name.
func (f *finder) refs() []Ref {
	slices.SortFunc(f.found, func(a, b Ref) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	return f.found
}

func (f *finder) podSpec(spec *corev1.PodSpec) {
	if sa := cmp.Or(spec.ServiceAccountName, spec.DeprecatedServiceAccount); sa != "" && sa != defaultServiceAccount {
		f.add(ServiceAccount, sa, false, "serviceAccountName")
	}
	for _, s := range spec.ImagePullSecrets {
		f.add(Secret, s.Name, false, "imagePullSecrets")
	}
	for i := range spec.Volumes {
		f.volume(&spec.Volumes[i])
	}
	for _, c := range spec.InitContainers {
		f.container("init container "+c.Name, c.EnvFrom, c.Env)
	}
	for _, c := range spec.Containers {
		f.container("container "+c.Name, c.EnvFrom, c.Env)
	}
	for _, c := range spec.EphemeralContainers {
		f.container("ephemeral container "+c.Name, c.EnvFrom, c.Env)
	}
}

func (f *finder) volume(v *corev1.Volume) {
	from := "volume " + v.Name
	switch {
	case v.ConfigMap != nil:
		f.add(ConfigMap, v.ConfigMap.Name, isTrue(v.ConfigMap.Optional), from)
	case v.Secret != nil:
		f.add(Secret, v.Secret.SecretName, isTrue(v.Secret.Optional), from)
	case v.PersistentVolumeClaim != nil:
		f.add(PersistentVolumeClaim, v.PersistentVolumeClaim.ClaimName, false, from)
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				f.add(ConfigMap, s.ConfigMap.Name, isTrue(s.ConfigMap.Optional), from)
			}
			if s.Secret != nil {
				f.add(Secret, s.Secret.Name, isTrue(s.Secret.Optional), from)
			}
		}
	}
}

func (f *finder) container(who string, envFrom []corev1.EnvFromSource, env []corev1.EnvVar) {
	for _, e := range envFrom {
		if e.ConfigMapRef != nil {
			f.add(ConfigMap, e.ConfigMapRef.Name, isTrue(e.ConfigMapRef.Optional), who+" envFrom")
		}
		if e.SecretRef != nil {
			f.add(Secret, e.SecretRef.Name, isTrue(e.SecretRef.Optional), who+" envFrom")
		}
	}
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			f.add(ConfigMap, r.Name, isTrue(r.Optional), who+" env "+e.Name)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			f.add(Secret, r.Name, isTrue(r.Optional), who+" env "+e.Name)
		}
	}
}

func isTrue(b *bool) bool { return b != nil && *b }
