package drift

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
)

// Episode is one ended drift episode of a member copy, from the drift
// ledger (status.clusterVersions[].driftHistory): a line of the table of
// --history, an item of its -o json and -o yaml.
type Episode struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Cluster   string `json:"cluster"`
	typesv1beta1.DriftEpisode
	// apiVersion of the federated resource, which drift suggest reads.
	apiVersion string
}

func (e Episode) resource() string {
	return Entry{Kind: e.Kind, Name: e.Name}.resource()
}

// episodes returns the ended episodes the ledgers of cpvs keep, the most
// recently ended first.
func episodes(cpvs []typesv1beta1.ClusterPropagatedVersion, cluster federatedtype.Scopes) []Episode {
	out := []Episode{}
	for _, cpv := range cpvs {
		namespace := cpv.Namespace
		if cluster.Has(cpv.Spec) {
			namespace = ""
		}
		for _, cv := range cpv.Status.ClusterVersions {
			for _, ep := range cv.DriftHistory {
				out = append(out, Episode{Namespace: namespace, Kind: cpv.Spec.TemplateKind, Name: cpv.Spec.Template, Cluster: string(cv.ClusterName), DriftEpisode: ep,
					apiVersion: cpv.Spec.TemplateAPIVersion})
			}
		}
	}
	slices.SortFunc(out, func(a, b Episode) int {
		return cmp.Or(b.End.Compare(a.End.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.resource(), b.resource()), cmp.Compare(a.Cluster, b.Cluster))
	})
	return out
}

// printEpisodes prints episodes in format, as printEntries prints entries.
func printEpisodes(w io.Writer, format string, episodes []Episode, allNamespaces bool, now time.Time) error {
	if format == formatJSON || format == formatYAML {
		return printStructured(w, format, episodes, "the drift history")
	}
	wide := format == formatWide
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	header := []string{"RESOURCE", "CLUSTER", "STATE", "ENDED", "LASTED", "RESOLVED BY", "PATHS"}
	if wide {
		header = append(header, "CHANGED BY", "VERSIONS", "RESYNC")
	}
	if allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, e := range episodes {
		row := []string{e.resource(), e.Cluster, string(e.State), duration.HumanDuration(now.Sub(e.End.Time)) + " ago", lasted(e.Start, e.End), string(e.ResolvedBy), paths(e.ChangedPaths)}
		if wide {
			row = append(row, orNone(changedBy(e.ChangedBy, e.ChangedByOperations)), versions(e.Before)+"→"+versions(e.After), orNone(e.Resync))
		}
		if allNamespaces {
			row = append([]string{orNone(e.Namespace)}, row...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// changedBy names the managers, each with the operations it wrote with
// when the ledger records them: kubectl-edit (Update),kubectl (Apply/Update).
// An episode recorded before operations were has the names alone.
func changedBy(managers []string, ops []typesv1beta1.ManagerOperation) string {
	out := make([]string, 0, len(managers))
	for _, m := range managers {
		out = append(out, withOperations(m, ops))
	}
	return strings.Join(out, ",")
}

// withOperations is manager and the operations ops record for it:
// kubectl-edit (Update); the name alone when they record none.
func withOperations(manager string, ops []typesv1beta1.ManagerOperation) string {
	var seen []string
	for _, o := range ops {
		if o.Manager == manager && !slices.Contains(seen, string(o.Operation)) {
			seen = append(seen, string(o.Operation))
		}
	}
	if len(seen) == 0 {
		return manager
	}
	slices.Sort(seen)
	return manager + " (" + strings.Join(seen, "/") + ")"
}

// lasted is an episode's length; under a second shows as 0s.
func lasted(start, end metav1.Time) string {
	d := end.Sub(start.Time)
	if d < time.Second {
		return "0s"
	}
	return duration.HumanDuration(d)
}

// versions writes template and override versions as t3/o2.
func versions(v typesv1beta1.EpisodeVersions) string {
	return fmt.Sprintf("t%s/o%s", cmp.Or(string(v.TemplateVersion), "?"), cmp.Or(string(v.OverrideVersion), "?"))
}
