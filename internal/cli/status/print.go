package status

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Output formats.
const (
	formatJSON = "json"
	formatYAML = "yaml"
)

const (
	// shownStates is how many drifted clusters an offender's line names.
	shownStates = 3
	// none fills an empty cell, as kubectl does.
	none = "<none>"
)

// validateFormat checks --output.
func validateFormat(format string) error {
	switch format {
	case "", formatJSON, formatYAML:
		return nil
	default:
		return fmt.Errorf("--output %q is not supported: use json or yaml, or leave it empty for the screen", format)
	}
}

// printReport prints r in format; ages are counted up to now.
func printReport(w io.Writer, format string, r Report, now time.Time) error {
	switch format {
	case formatJSON:
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the status: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	case formatYAML:
		data, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("encoding the status: %w", err)
		}
		_, err = w.Write(data)
		return err
	default:
		return printScreen(w, r, now)
	}
}

// printScreen prints the sections of r, a blank line between them.
func printScreen(w io.Writer, r Report, now time.Time) error {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	section(tw, "Clusters", len(r.Clusters) == 0, "None: 'fedwarden join NAME' adds one.",
		[]string{"NAME", "READY", "MODE", "VERSION", "REGION"}, func(row func(...string)) {
			for _, c := range r.Clusters {
				row(c.Name, withReason(string(c.Ready), c.Reason), string(c.Mode), orNone(c.KubernetesVersion), orNone(c.Region))
			}
		})
	// Each table is aligned on its own: a tabwriter aligns the cells of
	// consecutive lines only, and a heading has none.
	fmt.Fprintln(tw)
	section(tw, "Enabled types", len(r.Types) == 0, "None: 'fedwarden enable RESOURCE' adds one.",
		[]string{"NAME", "FEDERATED KIND", "PROPAGATION", "CONTROLLER"}, func(row func(...string)) {
			for _, t := range r.Types {
				row(t.Name, t.FederatedKind, string(t.Propagation), withReason(orNone(string(t.Controller)), establishedReason(t)))
			}
		})
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Federated resources")
	res := r.Resources
	fmt.Fprintf(tw, "%d total, %d propagated, %d drifted\n", res.Total, res.Propagated, res.Drifted)
	if states := clusterStates(res.ClusterStates); states != "" {
		fmt.Fprintf(tw, "Cluster copies: %s\n", states)
	}
	if len(r.WorstOffenders) > 0 || res.Drifted == 0 {
		fmt.Fprintln(tw)
		section(tw, "Worst offenders", len(r.WorstOffenders) == 0, "None: nothing drifted.",
			[]string{"NAMESPACE", "RESOURCE", "DRIFTED", "STATES", "SINCE"}, func(row func(...string)) {
				for _, o := range r.WorstOffenders {
					row(orNone(o.Namespace), o.resource(), fmt.Sprintf("%d/%d", o.DriftedClusters, o.Clusters), states(o.States), since(o.DriftedSince, now))
				}
			})
	}
	return tw.Flush()
}

// section prints a heading, then either the line empty says when there is
// nothing to show, or a table of header and the rows that rows adds.
func section(tw *tabwriter.Writer, heading string, isEmpty bool, empty string, header []string, rows func(row func(...string))) {
	fmt.Fprintln(tw, heading)
	if isEmpty {
		fmt.Fprintln(tw, empty)
		return
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	rows(func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) })
}

// withReason shows a status, and the reason when there is one and the
// status is not True: "False (ClusterUnreachable)".
func withReason(status, reason string) string {
	if reason == "" || status == string(metav1.ConditionTrue) {
		return status
	}
	return status + " (" + reason + ")"
}

// establishedReason is the reason of t's Established condition when that
// is not True.
func establishedReason(t TypeConfig) string {
	if t.Established == metav1.ConditionTrue {
		return ""
	}
	return t.Reason
}

// clusterStates shows the states that some copies are in, known states
// first in their order, then any other: "5 InSync, 2 Missing".
func clusterStates(counts map[typesv1beta1.DriftState]int) string {
	order := slices.Clone(driftStates)
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		if !slices.Contains(order, s) {
			order = append(order, s)
		}
	}
	var parts []string
	for _, s := range order {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return strings.Join(parts, ", ")
}

// states shows the first drifted clusters, and how many more there are:
// "member-1=Missing,member-2=Unreachable,+3".
func states(s []ClusterState) string {
	var parts []string
	for _, cs := range s[:min(shownStates, len(s))] {
		parts = append(parts, cs.Cluster+"="+string(cs.State))
	}
	if len(s) > shownStates {
		parts = append(parts, fmt.Sprintf("+%d", len(s)-shownStates))
	}
	return orNone(strings.Join(parts, ","))
}

// since is how long ago t was, as kubectl writes ages.
func since(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}
