package migrate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/migrate"
)

// printData prints v as YAML or JSON; false for the text format.
func printData(w io.Writer, v any, format string) (bool, error) {
	switch format {
	case manifest.JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case manifest.YAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return true, fmt.Errorf("encoding the plan: %w", err)
		}
		_, err = w.Write(data)
		return true, err
	}
	return false, nil
}

// printPlan prints the plan as text, or as YAML or JSON.
func printPlan(w io.Writer, p *migrate.Plan, format string) error {
	if done, err := printData(w, p, format); done {
		return err
	}
	printInventory(w, p.Inventory)
	fmt.Fprintln(w, "\nThe migration will:")
	printSteps(w, p.Steps)
	printFindings(w, "\nNot carried over", p.NotCarriedOver)
	printFindings(w, "\nNotes", p.Notes)
	printFindings(w, "\nBlockers (the migration refuses to run until they are fixed)", p.Blockers)
	fmt.Fprintln(w, "\nThen start Fedwarden's controller-manager with:")
	fmt.Fprintf(w, "  fedwarden controller-manager %s\n", strings.Join(p.ControllerManagerArgs, " "))
	return nil
}

// printSteps prints numbered steps.
func printSteps(w io.Writer, steps []migrate.Step) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, s := range steps {
		fmt.Fprintf(tw, "  %2d.\t%s\t%s\t%s\n", i+1, s.Action, s.Object, s.Detail)
	}
	_ = tw.Flush()
}

// printReview prints what --rollback would do with the state it found, as
// text, or as YAML or JSON.
func printReview(w io.Writer, r *migrate.RollbackReview, namespace, format string) error {
	if done, err := printData(w, r, format); done {
		return err
	}
	fmt.Fprintf(w, "State: %s, digest %s\n", r.Source, r.Digest)
	if r.Legacy {
		fmt.Fprintln(w, "  saved where an earlier Fedwarden kept it: anyone who may write ConfigMaps in its namespace may have written it instead")
	}
	if len(r.Refused) > 0 {
		printFindings(w, "\nRefused (no handover saves them; while any is listed, --rollback restores nothing)", r.Refused)
		return nil
	}
	fmt.Fprintln(w, "\n--rollback will:")
	printSteps(w, r.Steps)
	fmt.Fprintln(w, "\nIf this is the state your handover saved (it printed this digest), and each object above is KubeFed's, put KubeFed back with:")
	fmt.Fprintf(w, "  fedwarden migrate kubefed --rollback --namespace %s --state-digest %s\n", namespace, r.Digest)
	return nil
}

// printInventory prints what KubeFed holds, without credential content.
func printInventory(w io.Writer, inv *migrate.Inventory) {
	fmt.Fprintf(w, "KubeFed in namespace %s:\n", inv.Namespace)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	row("KubeFedConfig:", orNone(inv.ConfigName))
	if len(inv.Clusters) == 0 {
		row("KubeFedClusters:", "none")
	}
	for i, c := range inv.Clusters {
		key := ""
		if i == 0 {
			key = "KubeFedClusters:"
		}
		secret := "Secret " + c.SecretName + ": keys " + orNone(strings.Join(c.SecretKeys, ", "))
		if c.SecretMissing {
			secret = "Secret " + c.SecretName + ": missing"
		}
		row(key, fmt.Sprintf("%s  %s  Ready=%s  %s", c.Name, c.APIEndpoint, orNone(c.Ready), secret))
	}
	if len(inv.Types) == 0 {
		row("FederatedTypeConfigs:", "none")
	}
	for i, t := range inv.Types {
		key := ""
		if i == 0 {
			key = "FederatedTypeConfigs:"
		}
		row(key, fmt.Sprintf("%s  %d %s  propagation %s", t.Name, t.Resources, t.FederatedKind, orNone(t.Propagation)))
	}
	row("ReplicaSchedulingPreferences:", fmt.Sprint(inv.ReplicaSchedulingPreferences))
	row("PropagatedVersions:", fmt.Sprint(inv.PropagatedVersions))
	if inv.Controller != nil {
		row("Controller-manager:", fmt.Sprintf("Deployment %s, %d replicas", inv.Controller.Name, inv.Controller.Replicas))
	} else {
		row("Controller-manager:", "no Deployment "+migrate.ControllerDeployment+" in the namespace")
	}
	row("Webhook configurations:", orNone(strings.Join(inv.Webhooks, ", ")))
	_ = tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// printFindings prints a titled list of findings, nothing when empty.
func printFindings(w io.Writer, title string, fs []migrate.Finding) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:\n", title)
	for _, f := range fs {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}

// printNext says what to do after the handover, whose state has digest.
func printNext(w io.Writer, p *migrate.Plan, kubeconfig, digest string) {
	fmt.Fprintf(w, "KubeFed has handed over. Start Fedwarden's controller-manager against the host now:\n\n")
	fmt.Fprintf(w, "  fedwarden controller-manager --kubeconfig %s %s\n\n", kubeconfig, strings.Join(p.ControllerManagerArgs, " "))
	fmt.Fprintf(w, "or, with the Helm chart:\n\n  helm install fedwarden deploy/helm/fedwarden --namespace %s --skip-crds --set %s\n\n",
		p.Inventory.Namespace, strings.Join(helmValues(p.ControllerManagerArgs), ","))
	if p.Rejoin {
		fmt.Fprintln(w, "Each FederatedCluster uses Fedwarden's own identity in its member. KubeFed's Secrets and ServiceAccounts are left as they")
		fmt.Fprintln(w, "are, for --rollback: remove them once you are sure (docs/migrate-from-kubefed.md).")
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "It adopts the copies KubeFed placed without writing them; a copy that differs is reported as drift:")
	fmt.Fprintln(w, "kubectl get cpv -A, fedwarden drift -A. To go back: stop it, then run")
	fmt.Fprintf(w, "\n  fedwarden migrate kubefed --rollback --namespace %s --state-digest %s\n\n", p.Inventory.Namespace, digest)
	fmt.Fprintln(w, "Keep that digest: --rollback restores nothing from a state of another digest.")
}

// chartValues are the Helm chart's values of the controller-manager's
// flags that the plan sets; --namespace is the release namespace.
var chartValues = map[string]string{
	"--default-remediation":              "remediation.default",
	"--cluster-health-period":            "controllerManager.clusterHealth.period",
	"--cluster-health-timeout":           "controllerManager.clusterHealth.timeout",
	"--cluster-health-failure-threshold": "controllerManager.clusterHealth.failureThreshold",
	"--cluster-health-success-threshold": "controllerManager.clusterHealth.successThreshold",
	"--propagation-workers":              "controllerManager.propagationWorkers",
}

// helmValues returns the --set values of the chart for args.
func helmValues(args []string) []string {
	var out []string
	for _, a := range args {
		flag, value, _ := strings.Cut(a, "=")
		if key, ok := chartValues[flag]; ok {
			out = append(out, key+"="+value)
		}
	}
	return out
}
