package framework

import (
	"fmt"
	"slices"
	"strings"
)

// Factory builds a plugin.
type Factory func() Plugin

// Registry is the plugins that can be enabled, by name, in the order they
// run.
type Registry struct {
	names     []string
	factories map[string]Factory
}

// Register adds a plugin; plugins run in the order they were registered.
func (r *Registry) Register(name string, f Factory) {
	if r.factories == nil {
		r.factories = map[string]Factory{}
	}
	if _, dup := r.factories[name]; dup {
		panic(fmt.Sprintf("scheduler plugin %s registered twice", name))
	}
	r.names = append(r.names, name)
	r.factories[name] = f
}

// Names returns the registered plugin names in order.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// ParseEnabled reads a plugin list such as "*,-Capacity": "*" is every
// registered plugin, "name" adds one, "-name" removes one; later entries
// win.
func (r *Registry) ParseEnabled(spec string) ([]string, error) {
	on := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case item == "*":
			for _, n := range r.names {
				on[n] = true
			}
		case strings.HasPrefix(item, "-"):
			name := strings.TrimPrefix(item, "-")
			if err := r.known(name); err != nil {
				return nil, err
			}
			on[name] = false
		default:
			if err := r.known(item); err != nil {
				return nil, err
			}
			on[item] = true
		}
	}
	var enabled []string
	for _, n := range r.names {
		if on[n] {
			enabled = append(enabled, n)
		}
	}
	return enabled, nil
}

func (r *Registry) known(name string) error {
	if _, ok := r.factories[name]; !ok {
		return fmt.Errorf("unknown scheduler plugin %q (known: %s)", name, strings.Join(r.names, ", "))
	}
	return nil
}
