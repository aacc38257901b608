package up

import (
	"fmt"
	"io"
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
	fmt.Fprintf(w, "\nFedwarden is up in %.1fs: host and %s.\n\n", time.Since(b.started).Seconds(), strings.Join(members, ", "))
	fmt.Fprintf(w, "  export KUBECONFIG=%s\n", b.fed.Host.Kubeconfig)
	fmt.Fprintln(w, "  kubectl get federatedclusters")
	fmt.Fprintln(w, "  kubectl get fdeploy,cpv -A")
	fmt.Fprintln(w, "  fedwarden status")
	fmt.Fprintf(w, "  fedwarden console    # the web console, on %s\n", console.URL(console.DefaultAddress))
	if b.opts.withSamples {
		fmt.Fprintln(w, "\n  # Drift: change the sample in a member by hand, and watch Fedwarden write it back")
		fmt.Fprintf(w, "  kubectl --kubeconfig %s -n demo set image deployment/web web=nginx:hand-edited\n", first.Kubeconfig)
		fmt.Fprintln(w, "  kubectl get events -n demo --field-selector involvedObject.name=web")
		fmt.Fprintln(w, "  # Or only report it: set spec.driftPolicy.remediation: Alert on the FederatedDeployment, then")
		fmt.Fprintln(w, "  fedwarden drift -A -o wide")
		fmt.Fprintln(w, "  fedwarden diff fdeploy/web -n demo")
	} else {
		fmt.Fprintln(w, "\n  # Federate something: fedwarden federate, or apply a FederatedDeployment (see README)")
	}
	fmt.Fprintf(w, "\nMember kubeconfigs: %s/<member>/kubeconfig\n", filepath.Join(b.fed.Dir))
	logs := "controller-manager.log"
	if b.opts.pullMembers > 0 {
		logs += ", agent-<member>.log"
	}
	fmt.Fprintf(w, "Logs: %s (%s; clusters/<cluster>/*.log)\n", b.dir, logs)
	fmt.Fprintln(w, "Ctrl-C stops everything.")
}
