package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fedwarden/fedwarden/internal/planreport"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// outcome is plan's exit: exitError when a resource could not be planned
// in some cluster, else exitChanges when any cluster would change, its
// member refuses, or an object conflicts; nil when nothing would change.
func outcome(reports []*planreport.Report) error {
	var errs, changes []string
	for _, r := range reports {
		e, c := outcomeOf(r)
		errs, changes = appendNonEmpty(errs, e), appendNonEmpty(changes, c)
	}
	switch {
	case len(errs) > 0:
		return &streams.ExitError{Code: exitError, Err: errors.New(strings.Join(errs, "; "))}
	case len(changes) > 0:
		return &streams.ExitError{Code: exitChanges, Err: errors.New(strings.Join(changes, "; "))}
	}
	return nil
}

// outcomeOf says what could not be planned in r, and what would change.
func outcomeOf(r *planreport.Report) (errs, changes string) {
	s := r.Summary
	if len(s.Errors) > 0 {
		errs = fmt.Sprintf("%s could not be planned in %s: %s", r.Describe(), clusters(len(s.Errors)), join(s.Errors))
	}
	var parts []string
	if len(s.Changes) > 0 {
		parts = append(parts, fmt.Sprintf("would change %s: %s", clusters(len(s.Changes)), join(s.Changes)))
	}
	if len(s.Refused) > 0 {
		parts = append(parts, fmt.Sprintf("REFUSED by the member in %s: %s", clusters(len(s.Refused)), join(s.Refused)))
	}
	if len(s.Conflicts) > 0 {
		parts = append(parts, fmt.Sprintf("conflicts with an object Fedwarden does not manage in %s: %s", clusters(len(s.Conflicts)), join(s.Conflicts)))
	}
	for _, d := range r.Dependencies {
		if len(d.Adds) > 0 || len(d.Removes) > 0 {
			parts = append(parts, fmt.Sprintf("would move the copies of its dependency %s %s", d.Kind, d.Name))
		}
	}
	if len(parts) > 0 {
		changes = r.Describe() + " " + strings.Join(parts, "; ")
	}
	return errs, changes
}

func appendNonEmpty(list []string, s string) []string {
	if s == "" {
		return list
	}
	return append(list, s)
}

// clusters says "1 cluster", "2 clusters".
func clusters(n int) string {
	if n == 1 {
		return "1 cluster"
	}
	return fmt.Sprintf("%d clusters", n)
}

func join(names []string) string { return strings.Join(names, ", ") }
