package render

import (
	"math"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ingressV1 is the only Ingress version Kubernetes still serves.
var ingressV1 = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}

// defaultPathType is the pathType extensions/v1beta1 defaulted to, which
// networking.k8s.io/v1 requires.
const defaultPathType = "ImplementationSpecific"

// convertLegacyIngress returns obj, a rendered Ingress of target, converted
// from the extensions/v1beta1 shape that KubeFed's manifests use (and that
// the Federated<Kind>'s template accepts, see federatedtype) to the
// networking.k8s.io/v1 shape members serve, as Kubernetes converted it:
//
//   - a backend's serviceName and servicePort become service.name and
//     service.port.number (an integer) or service.port.name (a string);
//   - a path without pathType gets ImplementationSpecific;
//   - spec.backend becomes spec.defaultBackend, converted as a path's.
//
// A backend's legacy fields are left as they are when it has service too,
// or when servicePort is neither an integer nor a string, and so is
// spec.backend when spec.defaultBackend is set: the member then refuses the
// object, naming the field. obj itself is never changed: when something is
// converted, the result is a copy. Objects of other types, and Ingresses
// already in the v1 shape, are returned as they are.
func convertLegacyIngress(target Target, obj map[string]any) map[string]any {
	if target.Kind != ingressV1 {
		return obj
	}
	out := runtime.DeepCopyJSON(obj)
	spec, ok := out["spec"].(map[string]any)
	if !ok {
		return obj
	}
	changed := false
	if backend, ok := spec["backend"].(map[string]any); ok {
		if _, taken := spec["defaultBackend"]; !taken {
			convertLegacyBackend(backend)
			spec["defaultBackend"] = backend
			delete(spec, "backend")
			changed = true
		}
	}
	for _, path := range ingressPaths(spec) {
		if _, ok := path["pathType"]; !ok {
			path["pathType"] = defaultPathType
			changed = true
		}
		if backend, ok := path["backend"].(map[string]any); ok && convertLegacyBackend(backend) {
			changed = true
		}
	}
	if !changed {
		return obj
	}
	return out
}

// ingressPaths returns the paths of the HTTP rules of spec.
func ingressPaths(spec map[string]any) []map[string]any {
	var paths []map[string]any
	rules, _ := spec["rules"].([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		http, _ := rule["http"].(map[string]any)
		list, _ := http["paths"].([]any)
		for _, p := range list {
			if path, ok := p.(map[string]any); ok {
				paths = append(paths, path)
			}
		}
	}
	return paths
}

// convertLegacyBackend replaces the serviceName and servicePort of backend
// by service, unless backend has service already or the port is neither an
// integer nor a string. It tells whether it changed backend.
func convertLegacyBackend(backend map[string]any) bool {
	name, hasName := backend["serviceName"]
	port, hasPort := backend["servicePort"]
	if _, hasService := backend["service"]; hasService || (!hasName && !hasPort) {
		return false
	}
	service := map[string]any{}
	if hasName {
		service["name"] = name
	}
	if hasPort {
		p, ok := backendPort(port)
		if !ok {
			return false
		}
		service["port"] = p
	}
	delete(backend, "serviceName")
	delete(backend, "servicePort")
	backend["service"] = service
	return true
}

// backendPort returns the v1 port of a legacy servicePort, an
// int-or-string: {number} for an integer, {name} for a string, as
// Kubernetes converts it (a string of digits stays a name).
func backendPort(port any) (map[string]any, bool) {
	switch p := port.(type) {
	case int64:
		return map[string]any{"number": p}, true
	case float64:
		if p != math.Trunc(p) || math.Abs(p) > 1<<53 {
			return nil, false
		}
		return map[string]any{"number": int64(p)}, true
	case string:
		return map[string]any{"name": p}, true
	default:
		return nil, false
	}
}
