package drift

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Proposal is what `drift suggest` proposes for one federated resource:
// the entries to add to its spec.driftPolicy, with their evidence, and the
// merge patch that adds them. An item of -o json.
type Proposal struct {
	// APIVersion and Kind of the federated resource.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace of the federated resource; empty for a cluster-scoped one.
	Namespace string `json:"namespace"`
	// Name of the federated resource.
	Name string `json:"name"`
	// Suggestions are the entries to add.
	Suggestions []Suggestion `json:"suggestions"`
	// Patch is the JSON merge patch that adds them. A merge patch replaces
	// a list whole, so its lists hold the entries the resource's policy
	// has already, then the new ones.
	Patch map[string]any `json:"patch"`
	// Command is the kubectl command line that applies Patch.
	Command string `json:"command"`
}

// newProposal proposes suggestions for the resource ref, whose
// spec.driftPolicy is policy (nil for none).
func newProposal(ref resourceRef, policy *typesv1beta1.DriftPolicy, suggestions []Suggestion) Proposal {
	p := Proposal{APIVersion: ref.apiVersion, Kind: ref.kind, Namespace: ref.namespace, Name: ref.name, Suggestions: suggestions}
	p.Patch = mergePatch(policy, suggestions)
	body, _ := json.Marshal(p.Patch) // maps of strings and lists of strings always encode
	p.Command = p.kubectl() + " --type merge -p " + shellQuote(string(body))
	return p
}

// mergePatch is the merge patch that adds suggestions to the lists of
// policy: each list the suggestions add to, with the entries it has
// first.
func mergePatch(policy *typesv1beta1.DriftPolicy, suggestions []Suggestion) map[string]any {
	if policy == nil {
		policy = &typesv1beta1.DriftPolicy{}
	}
	lists := map[string][]string{}
	for _, s := range suggestions {
		if lists[s.Field] == nil {
			lists[s.Field] = existing(policy, s.Field)
		}
		if !slices.Contains(lists[s.Field], s.Value) {
			lists[s.Field] = append(lists[s.Field], s.Value)
		}
	}
	driftPolicy := map[string]any{}
	for field, values := range lists {
		driftPolicy[field] = values
	}
	return map[string]any{"spec": map[string]any{"driftPolicy": driftPolicy}}
}

// existing returns the entries of the resource-wide list field of policy.
func existing(policy *typesv1beta1.DriftPolicy, field string) []string {
	out := []string{}
	if field == fieldIgnoreManagers {
		for _, m := range policy.IgnoreManagers {
			out = append(out, string(m))
		}
		return out
	}
	for _, p := range policy.IgnorePaths {
		out = append(out, string(p))
	}
	return out
}

// resource names the federated resource as kubectl takes it, kind and
// group: federateddeployment.types.kubefed.io/web.
func (p Proposal) resource() string {
	gv, _ := schema.ParseGroupVersion(p.APIVersion)
	return strings.ToLower(p.Kind) + "." + gv.Group + "/" + p.Name
}

// kubectl is the start of the command line that patches the resource.
func (p Proposal) kubectl() string {
	kind, name, _ := strings.Cut(p.resource(), "/")
	cmd := "kubectl patch " + kind + " " + name
	if p.Namespace != "" {
		cmd += " -n " + p.Namespace
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printProposals prints proposals in format: for text, each resource with
// its suggestions, their evidence and the kubectl command; for yaml, one
// merge patch document per resource, naming the resource and with the
// evidence in comments, for `kubectl patch --type merge --patch-file`;
// for json, the proposals.
func printProposals(w io.Writer, format string, proposals []Proposal) error {
	switch format {
	case formatJSON:
		return printStructured(w, format, proposals, "the suggestions")
	case formatYAML:
		return printPatchDocuments(w, proposals)
	}
	for i, p := range proposals {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, p.title())
		for _, s := range p.Suggestions {
			fmt.Fprintf(w, "  %s: %s\n", s.Field, s.Value)
			for _, e := range s.Evidence {
				fmt.Fprintf(w, "    %s\n", e.describe())
			}
		}
		if _, err := fmt.Fprintf(w, "  %s\n", p.Command); err != nil {
			return err
		}
	}
	return nil
}

// title names the resource: federateddeployment.types.kubefed.io/web -n shop.
func (p Proposal) title() string {
	if p.Namespace == "" {
		return p.resource()
	}
	return p.resource() + " -n " + p.Namespace
}

// printPatchDocuments prints each proposal's patch as a YAML document
// that also names the resource (a merge patch may: the values are the
// resource's own), the evidence in comments.
func printPatchDocuments(w io.Writer, proposals []Proposal) error {
	for i, p := range proposals {
		doc := map[string]any{"apiVersion": p.APIVersion, "kind": p.Kind, "metadata": p.metadata()}
		for k, v := range p.Patch {
			doc[k] = v
		}
		data, err := yaml.Marshal(doc)
		if err != nil {
			return fmt.Errorf("encoding the patch of %s: %w", p.title(), err)
		}
		var b strings.Builder
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# %s: apply with\n#   %s --type merge --patch-file FILE\n", p.title(), p.kubectl())
		for _, s := range p.Suggestions {
			for _, e := range s.Evidence {
				fmt.Fprintf(&b, "# %s %s: %s\n", s.Field, s.Value, e.describe())
			}
		}
		b.Write(data)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

func (p Proposal) metadata() map[string]any {
	m := map[string]any{"name": p.Name}
	if p.Namespace != "" {
		m["namespace"] = p.Namespace
	}
	return m
}

// describe says what e shows: "/spec/replicas by kube-controller-manager
// (Update): 5 episodes in 2 clusters (a, b), first seen …, last seen …".
func (e Evidence) describe() string {
	who := e.Manager
	if len(e.Operations) > 0 {
		who += " (" + strings.Join(e.Operations, "/") + ")"
	}
	if e.Person {
		who += ", a person's tool"
	}
	clusters := "clusters"
	if len(e.Clusters) == 1 {
		clusters = "cluster"
	}
	return fmt.Sprintf("%s by %s: %d episodes in %d %s (%s), first seen %s, last seen %s", e.Path, who, e.Episodes,
		len(e.Clusters), clusters, strings.Join(e.Clusters, ", "), e.FirstSeen.UTC().Format(time.RFC3339), e.LastSeen.UTC().Format(time.RFC3339))
}
