package drift

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// Output formats.
const (
	formatWide = "wide"
	formatJSON = "json"
	formatYAML = "yaml"
)

const (
	// shownPaths is how many changed paths the table shows.
	shownPaths = 2
	// maxMessage bounds the message -o wide shows, in characters.
	maxMessage = 80
	// none fills an empty cell, as kubectl does.
	none = "<none>"
)

// validateFormat checks --output.
func validateFormat(format string) error {
	switch format {
	case "", formatWide, formatJSON, formatYAML:
		return nil
	default:
		return fmt.Errorf("--output %q is not supported: use wide, json or yaml, or leave it empty for a table", format)
	}
}

// printEntries prints entries in format; ages are counted up to now. The
// table has a NAMESPACE column when every namespace is listed, as kubectl's.
func printEntries(w io.Writer, format string, entries []Entry, allNamespaces bool, now time.Time) error {
	if format == formatJSON || format == formatYAML {
		return printStructured(w, format, entries, "the drift list")
	}
	return printTable(w, entries, format == formatWide, allNamespaces, now)
}

// printStructured prints v, what it is called in errors, as JSON or YAML.
func printStructured(w io.Writer, format string, v any, what string) error {
	var data []byte
	var err error
	if format == formatJSON {
		data, err = json.MarshalIndent(v, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("encoding %s: %w", what, err)
	}
	_, err = w.Write(data)
	return err
}

// printTable prints entries as kubectl prints tables.
func printTable(w io.Writer, entries []Entry, wide, namespaces bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	header := []string{"RESOURCE", "CLUSTER", "STATE", "AGE", "PATHS"}
	if wide {
		header = append(header, "CHANGED BY", "REMEDIATION", "MESSAGE")
	}
	if namespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, e := range entries {
		row := []string{e.resource(), e.Cluster, string(e.State), age(e, now), paths(e.ChangedPaths)}
		if wide {
			row = append(row, orNone(strings.Join(e.ChangedBy, ",")), orNone(string(e.Remediation)), orNone(message(e.Message)))
		}
		if namespaces {
			row = append([]string{orNone(e.Namespace)}, row...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// age is how long e has been out of sync, as kubectl writes ages.
func age(e Entry, now time.Time) string {
	if e.DriftedSince == nil {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(e.DriftedSince.Time))
}

// paths shows the first changed paths, and how many more there are.
func paths(p []string) string {
	if len(p) <= shownPaths {
		return orNone(strings.Join(p, ","))
	}
	return fmt.Sprintf("%s,+%d", strings.Join(p[:shownPaths], ","), len(p)-shownPaths)
}

// message returns m on one line, at most maxMessage characters long.
func message(m string) string {
	m = strings.Join(strings.Fields(m), " ")
	if r := []rune(m); len(r) > maxMessage {
		return string(r[:maxMessage-3]) + "..."
	}
	return m
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}
