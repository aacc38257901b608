package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// diffContext is how many unchanged lines the side-by-side diff shows
// around each change.
const diffContext = 4

// Diff is the comparison of one cluster's copy with the desired one.
type Diff struct {
	Cluster string `json:"cluster"`
	// Differs tells whether the copy differs; Reasons say how.
	Differs bool     `json:"differs"`
	Reasons []string `json:"reasons,omitempty"`
	// Lines are the side-by-side diff, desired on the left, live on the
	// right; a nil side has no line there.
	Lines []DiffLine `json:"lines,omitempty"`
	// Pull: the host cannot read a Pull cluster; Agent is what its agent
	// reported.
	Pull  bool   `json:"pull,omitempty"`
	Agent string `json:"agent,omitempty"`
	// Error says why the copy could not be compared.
	Error string `json:"error,omitempty"`
}

// DiffLine is one line of a side-by-side diff. Op is equal, change (left
// removed, right added), del, add, or skip (unchanged lines left out).
type DiffLine struct {
	Op    string    `json:"op"`
	Left  *DiffText `json:"left,omitempty"`
	Right *DiffText `json:"right,omitempty"`
}

// DiffText is a numbered line of one side.
type DiffText struct {
	N    int    `json:"n"`
	Text string `json:"text"`
}

// serveDiff compares the copy in ?cluster= with the desired one, reading
// the member with the credentials the host keeps for it, which it reads
// with the user's identity. A Secret's values are always redacted.
func (s *Server) serveDiff(w http.ResponseWriter, r *http.Request, v *view) {
	found := s.findRow(w, r, v)
	if found == nil {
		return
	}
	cluster := r.URL.Query().Get("cluster")
	out := Diff{Cluster: cluster}
	i := slices.IndexFunc(found.cpv.Spec.Clusters, func(pc typesv1beta1.PlacedCluster) bool { return string(pc.Name) == cluster })
	if i < 0 {
		out.Error = fmt.Sprintf("%s is not placed on cluster %q", found.id, cluster)
		writeJSON(w, http.StatusOK, out)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	res, err := s.diffResource(r, v, found)
	if err == nil {
		var verdict memberdiff.Verdict
		verdict, err = memberdiff.Copy(ctx, memberdiff.Options{Members: s.members, Host: v.client, Timeout: s.opts.RequestTimeout}, res, found.cpv.Spec.Clusters[i])
		if err == nil {
			out.Differs, out.Reasons = verdict.Differs(), verdict.Reasons
			out.Lines, err = sideBySide(verdict.Desired, verdict.Live)
		}
	}
	switch {
	case errors.Is(err, memberdiff.ErrPullCluster):
		out.Pull, out.Error = true, "the host keeps no credentials for a Pull cluster and cannot read its copy"
		out.Agent = agentReport(found, cluster)
	case err != nil:
		out.Error = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

// diffResource reads what comparing needs, as the user: the federated
// type (FederatedTypeConfigs) and the federated resource.
func (s *Server) diffResource(r *http.Request, v *view, found *row) (*memberdiff.Resource, error) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	ftcs := &corev1beta1.FederatedTypeConfigList{}
	if err := v.client.List(ctx, ftcs); err != nil {
		return nil, fmt.Errorf("listing FederatedTypeConfigs, which say what %s federates: %w", found.kind, err)
	}
	i := slices.IndexFunc(ftcs.Items, func(ftc corev1beta1.FederatedTypeConfig) bool {
		f := ftc.Spec.FederatedType
		return f.Kind == found.kind && (found.group == "" || f.Group == found.group)
	})
	if i < 0 {
		return nil, fmt.Errorf("no FederatedTypeConfig federates %s", found.kind)
	}
	typ := propagation.TypeFromConfig(&ftcs.Items[i])
	fed := &unstructured.Unstructured{}
	fed.SetGroupVersionKind(typ.Federated)
	key := federatedKind{namespaced: typ.FederatedNamespaced}.key(found)
	if err := v.client.Get(ctx, key, fed); err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", found.kind, found.name, err)
	}
	return memberdiff.NewResource(typ, fed, found.cpv)
}

// agentReport says what a Pull cluster's agent recorded.
func agentReport(r *row, cluster string) string {
	c, ok := r.cell(cluster)
	if !ok || c.entry == nil {
		return "its agent has not reported yet"
	}
	report := fmt.Sprintf("its agent reports %s at template version %s, override version %s", orNone(string(c.entry.State)),
		orNone(string(c.entry.TemplateVersion)), orNone(string(c.entry.OverrideVersion)))
	if len(c.entry.ChangedPaths) > 0 {
		report += ": changed " + strings.Join(c.entry.ChangedPaths, ", ")
	}
	return report
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// sideBySide returns the side-by-side diff of desired and live as YAML;
// a nil live copy has no lines. Nothing when both are nil.
func sideBySide(desired, live map[string]any) ([]DiffLine, error) {
	if desired == nil && live == nil {
		return nil, nil
	}
	a, err := yamlLines(desired)
	if err != nil {
		return nil, err
	}
	b, err := yamlLines(live)
	if err != nil {
		return nil, err
	}
	return diffLines(a, b), nil
}

// diffLines pairs the lines of a and b: equal ones, changed ones side by
// side, with diffContext lines of context around changes.
func diffLines(a, b []string) []DiffLine {
	var out []DiffLine
	text := func(lines []string, i int) *DiffText { return &DiffText{N: i + 1, Text: lines[i]} }
	for g, group := range difflib.NewMatcher(a, b).GetGroupedOpCodes(diffContext) {
		if g > 0 || group[0].I1 > 0 || group[0].J1 > 0 {
			out = append(out, DiffLine{Op: "skip"})
		}
		for _, op := range group {
			switch op.Tag {
			case 'e':
				for i, j := op.I1, op.J1; i < op.I2; i, j = i+1, j+1 {
					out = append(out, DiffLine{Op: "equal", Left: text(a, i), Right: text(b, j)})
				}
			case 'r', 'd', 'i':
				for k := 0; k < max(op.I2-op.I1, op.J2-op.J1); k++ {
					line := DiffLine{Op: "change"}
					if op.I1+k < op.I2 {
						line.Left = text(a, op.I1+k)
					}
					if op.J1+k < op.J2 {
						line.Right = text(b, op.J1+k)
					}
					switch {
					case line.Left == nil:
						line.Op = "add"
					case line.Right == nil:
						line.Op = "del"
					}
					out = append(out, line)
				}
			}
		}
	}
	return out
}

// yamlLines returns obj as YAML lines, without their newlines; nil for a
// nil obj.
func yamlLines(obj map[string]any) ([]string, error) {
	if obj == nil {
		return nil, nil
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding as YAML: %w", err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), nil
}
