package planreport

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Write prints the reports as JSON (one report, or a list of them for
// several resources) or, when asJSON is false, as text: a report per
// cluster.
func Write(w io.Writer, asJSON bool, reports []*Report) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		// Diffs and redaction markers hold < and >: keep them readable.
		enc.SetEscapeHTML(false)
		if len(reports) == 1 {
			return enc.Encode(reports[0])
		}
		return enc.Encode(reports)
	}
	var b strings.Builder
	for i, r := range reports {
		if i > 0 {
			b.WriteString("\n---\n\n")
		}
		printHeader(&b, r)
		for _, c := range r.Clusters {
			b.WriteString("\n")
			printCluster(&b, r, c)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// printHeader says what is planned, where it goes and in which waves.
func printHeader(b *strings.Builder, r *Report) {
	what := "a change to the resource the host has"
	switch {
	case r.Source == "host":
		what = "as the host has it: what the controller does next"
	case r.New:
		what = "a new resource: the host does not have it"
	}
	fmt.Fprintf(b, "Plan for %s (%s)\n", r.Describe(), what)
	if r.Waiting != "" {
		fmt.Fprintf(b, "Waiting: %s\n", r.Waiting)
	}
	fmt.Fprintf(b, "Versions: template %s, override %s\n", r.Versions.Template, r.Versions.Override)
	fmt.Fprintf(b, "Placement: %s\n", r.Placement.Message)
	if len(r.Placement.Down) > 0 {
		failover := r.Placement.Failover
		if failover == "" {
			failover = "no failover policy applies (spec.placement.failover, with a ReplicaSchedulingPreference or spread constraints): an outage moves nothing"
		}
		fmt.Fprintf(b, "If %s were down past the toleration: %s\n", strings.Join(r.Placement.Down, ", "), failover)
	} else if r.Placement.Failover != "" {
		fmt.Fprintf(b, "Failover: %s\n", r.Placement.Failover)
	}
	b.WriteString("  Member capacity was not considered: plan has no capacity source, so the Capacity plugin passed every cluster.\n")
	printDependencies(b, r.Dependencies)
	printRollout(b, r.Rollout)
}

// printDependencies says, per dependency, where the change adds or removes
// its copies, or why it does not go with the workload.
func printDependencies(b *strings.Builder, deps []Dependency) {
	if len(deps) == 0 {
		return
	}
	b.WriteString("Dependencies (spec.propagateDependencies):\n")
	for _, d := range deps {
		var parts []string
		switch d.State {
		case "Explicit":
			parts = append(parts, "sent by the user's own Federated"+d.Kind+", whose placement wins")
		case "Missing":
			parts = append(parts, "missing on the host: the workload goes without it, and its Pods wait for it")
			if d.Optional {
				parts[0] += " (optional)"
			}
		case "KindNotEnabled":
			parts = append(parts, "not sent: its kind is not federated (fedwarden enable)")
		}
		if len(d.Adds) > 0 {
			parts = append(parts, "a copy added in "+strings.Join(d.Adds, ", "))
		}
		if len(d.Removes) > 0 {
			parts = append(parts, "its copy removed from "+strings.Join(d.Removes, ", "))
		}
		if len(parts) == 0 {
			parts = append(parts, "unchanged")
		}
		fmt.Fprintf(b, "  %s %s: %s\n", d.Kind, d.Name, strings.Join(parts, "; "))
	}
}

// printRollout says in which waves the change goes and, under Waves, where
// the rollout engine takes them: the revision, each wave's phase, and
// where the rollout is, or why the engine was not run.
func printRollout(b *strings.Builder, ro Rollout) {
	fmt.Fprintf(b, "Rollout: %s", ro.Strategy)
	if ro.Engine {
		fmt.Fprintf(b, ", revision %d", ro.Revision)
		if ro.NewRevision {
			b.WriteString(" (a new revision)")
		}
		if ro.FromRevision != 0 {
			fmt.Fprintf(b, " from revision %d", ro.FromRevision)
		}
	}
	if ro.Paused {
		b.WriteString(" (paused: no cluster gets a new revision until it is resumed)")
	}
	b.WriteString("\n")
	for i, w := range ro.Waves {
		fmt.Fprintf(b, "  wave %d/%d %s: %s%s", i+1, len(ro.Waves), w.Name, orNoCluster(w.Clusters), waveNotes(w))
		if w.Phase != "" {
			fmt.Fprintf(b, " — %s", w.Phase)
		}
		b.WriteString("\n")
	}
	switch {
	case ro.Note != "":
		fmt.Fprintf(b, "  The rollout engine was not run: %s.\n", ro.Note)
	case ro.Halted != nil:
		fmt.Fprintf(b, "  Halted (%s): %s\n", ro.Halted.Reason, ro.Halted.Message)
	case ro.Engine && ro.Complete:
		fmt.Fprintf(b, "  Rolled out: %s\n", ro.Progress)
	case ro.Engine:
		fmt.Fprintf(b, "  Rolling out: %s\n", ro.Progress)
	}
}

// waveNotes says how a wave waits, if it does.
func waveNotes(w Wave) string {
	var notes []string
	if w.Pause {
		notes = append(notes, "waits for approval")
	}
	if w.BakeSeconds > 0 {
		notes = append(notes, fmt.Sprintf("bakes %ds", w.BakeSeconds))
	}
	if w.MaxUnavailable != nil {
		notes = append(notes, fmt.Sprintf("%d at a time", *w.MaxUnavailable))
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, ", ") + ")"
}

// printCluster prints one cluster's plan.
func printCluster(b *strings.Builder, r *Report, c Cluster) {
	fmt.Fprintf(b, "%s: %s", c.Name, c.Action)
	if c.Placed {
		if c.WaveNumber > 0 {
			fmt.Fprintf(b, ", wave %d/%d %s", c.WaveNumber, len(r.Rollout.Waves), c.Wave)
		}
		if c.Replicas != nil {
			fmt.Fprintf(b, ", %d replicas", *c.Replicas)
		}
	}
	if c.Pull {
		b.WriteString(" (Pull cluster)")
	}
	b.WriteString("\n")
	if c.Reason != "" {
		fmt.Fprintf(b, "  why: %s\n", c.Reason)
	}
	if c.Error != "" {
		fmt.Fprintf(b, "  error: %s\n", c.Error)
	}
	if d := c.DryRun; d != nil {
		switch d.Status {
		case DryRunAllowed:
			b.WriteString("  dry run: allowed by the member\n")
		case DryRunRefused:
			fmt.Fprintf(b, "  dry run: REFUSED by the member: %s\n", d.Message)
		case DryRunSkipped:
			fmt.Fprintf(b, "  dry run: skipped: %s\n", d.Message)
		case DryRunFailed:
			b.WriteString("  dry run: failed (see the error)\n")
		}
	}
	if d := c.OverwritesDrift; d != nil {
		fmt.Fprintf(b, "  overwrites drift: %s", d.State)
		if len(d.ChangedPaths) > 0 {
			fmt.Fprintf(b, " at %s", strings.Join(d.ChangedPaths, ", "))
		}
		if len(d.ChangedBy) > 0 {
			fmt.Fprintf(b, " (changed by %s)", strings.Join(d.ChangedBy, ", "))
		}
		b.WriteString("\n")
	}
	b.WriteString(c.Diff)
}

func orNoCluster(names []string) string {
	if len(names) == 0 {
		return "no cluster"
	}
	return strings.Join(names, ", ")
}
