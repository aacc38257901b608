package up

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fedwarden/fedwarden/internal/cli/console"
)

// printNext says what is running and what to type next.
func (b *bringer) printNext(w io.Writer) {
	var members []string
	pull := len(b.fed.Members) - b.opts.pullMembers
	for i, m := range b.fed.Members {
		mode := ""
		if i >= pull {
			mode = ", Pull"
		}
		members = append(members, fmt.Sprintf("%s (%s%s)", m.Name, regions[i], mode))
	}
	first := b.fed.Members[0]
	fw := b.typed
	if fw == "" {
		fw = "fedwarden"
	}
	fmt.Fprintf(w, "\nFedwarden is up in %.1fs: host and %s.\n\n", time.Since(b.started).Seconds(), strings.Join(members, ", "))
	fmt.Fprintf(w, "  export KUBECONFIG=%s\n", b.fed.Host.Kubeconfig)
	fmt.Fprintln(w, "  kubectl get federatedclusters")
	fmt.Fprintln(w, "  kubectl get fdeploy,cpv -A")
	fmt.Fprintf(w, "  %s status\n", fw)
	fmt.Fprintf(w, "  %s console    # the web console, on %s\n", fw, console.URL(console.DefaultAddress))
	if b.opts.withSamples {
		fmt.Fprintln(w, "\n  # Drift: change the sample in a member by hand, and watch Fedwarden write it back")
		fmt.Fprintf(w, "  kubectl --kubeconfig %s -n demo set image deployment/web web=nginx:hand-edited\n", first.Kubeconfig)
		fmt.Fprintln(w, "  kubectl get events -n demo --field-selector involvedObject.name=web")
		fmt.Fprintln(w, "  # Or only report it: set spec.driftPolicy.remediation: Alert on the FederatedDeployment, then")
		fmt.Fprintf(w, "  %s drift -A -o wide\n", fw)
		fmt.Fprintf(w, "  %s diff fdeploy/web -n demo\n", fw)
	} else {
		fmt.Fprintf(w, "\n  # Federate something: %s federate, or apply a FederatedDeployment (docs/reference/api.md)\n", fw)
	}
	fmt.Fprintf(w, "\nMember kubeconfigs: %s/<member>/kubeconfig\n", filepath.Join(b.fed.Dir))
	logs := "controller-manager.log"
	if b.opts.pullMembers > 0 {
		logs += ", agent-<member>.log"
	}
	fmt.Fprintf(w, "Logs: %s (%s; clusters/<cluster>/*.log)\n", b.dir, logs)
	fmt.Fprintln(w, "Ctrl-C stops everything.")
}

// typedName returns how to type the fedwarden binary at self, an absolute
// path, in a shell in the current directory (see typedAs). The binary is
// not on $PATH after `make up`, which runs bin/fedwarden: a bare
// "fedwarden" would not be found.
func typedName(self string) string {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = ""
	}
	onPath, err := exec.LookPath("fedwarden")
	if err != nil {
		onPath = ""
	}
	return typedAs(self, cwd, onPath)
}

// typedAs returns how to type the binary self in a shell whose working
// directory is cwd, when "fedwarden" on $PATH is onPath (empty: none):
// "fedwarden" when that is self; else self's path relative to cwd when self
// is under it (bin/fedwarden); else self. The result is quoted for the
// shell when it needs to be.
func typedAs(self, cwd, onPath string) string {
	if onPath != "" && sameFile(onPath, self) {
		return "fedwarden"
	}
	if cwd != "" {
		if resolved, err := filepath.EvalSymlinks(cwd); err == nil {
			cwd = resolved
		}
		if rel, err := filepath.Rel(cwd, self); err == nil && filepath.IsLocal(rel) {
			if !strings.ContainsRune(rel, filepath.Separator) {
				rel = "." + string(filepath.Separator) + rel
			}
			return shellQuote(rel)
		}
	}
	return shellQuote(self)
}

// sameFile says whether paths a and b name the same existing file.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// shellQuote returns s as one shell word: as it is when it holds only
// characters no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
