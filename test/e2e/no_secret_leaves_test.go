package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/leakscan"
)

// noSecretLeaves names the check that runs after every test of the
// package (TestMain): it is not a test function, as it must see what every
// test, parallel ones included, created and logged.
const noSecretLeaves = "TestNoSecretLeaves"

// leaks collects, for the whole run, the secret values the tests create and
// the places where none may appear (package leakscan): fedtest tells it of
// every controller-manager's and agent's log, of the tokens it mints, and
// watches the clusters of every test bed a controller-manager works on.
var leaks *leakscan.Scanner

// startLeakScan starts collecting, before the shared test bed starts, so
// that its clusters are watched from the first object on; the kept logs go
// under dir.
func startLeakScan(dir string) {
	leaks = leakscan.New(filepath.Join(dir, "leakscan"))
	fedtest.ScanForLeaks(leaks)
}

// checkNoSecretLeaves proves the safety contract's invariant "no secret
// leaves" over the whole run: no value of any Secret of any test bed, no
// token a test minted, and no admin key appears in a log of a
// controller-manager or an agent, in an Event of any namespace, or in the
// status of a FederatedCluster, FederatedTypeConfig, ClusterPropagatedVersion
// or federated resource. Values shorter than leakscan.MinLength bytes are
// left out, as they would match by chance; the report says how many. It
// runs once every test has ended and every controller-manager of the run
// has stopped (their logs are whole), before the shared test bed stops. It
// prints what it found as a failed test would, naming each place and whose
// value it holds, never the value, and returns 1 when it found any.
func checkNoSecretLeaves() int {
	if leaks == nil {
		return 0
	}
	start := time.Now()
	fedtest.StopWatching()
	found, summary, err := leaks.Scan()
	var real []leakscan.Leak
	canaries := map[string]bool{}
	for _, l := range found {
		if l.Canary {
			canaries[l.Origin] = true
		} else {
			real = append(real, l)
		}
	}
	blind := len(canaries) < summary.Canaries
	took := time.Since(start).Seconds()
	if len(real) == 0 && err == nil && !blind {
		if testing.Verbose() {
			fmt.Printf("--- PASS: %s (%.2fs)\n    %s; %d canaries planted, all found\n", noSecretLeaves, took, summary, summary.Canaries)
			for _, origin := range summary.Origins {
				fmt.Printf("    looked for %s\n", origin)
			}
		}
		return 0
	}
	fmt.Printf("--- FAIL: %s (%.2fs)\n    %s\n", noSecretLeaves, took, summary)
	for _, l := range real {
		fmt.Printf("    a secret left: %s\n", l)
	}
	if blind {
		fmt.Printf("    the scan is blind: it found %d of the %d canaries TestNoSecretLeavesScanSeesAPlantedSecret planted, so it would miss a leak too\n",
			len(canaries), summary.Canaries)
	}
	if err != nil {
		fmt.Printf("    the scan is incomplete: %v\n", err)
	}
	fmt.Fprintf(os.Stderr, "FAIL: %s: invariant 7 of the safety contract (docs/safety.md), no secret leaves, is not shown: %d places hold secret values\n", noSecretLeaves, len(real))
	return 1
}

// The leak scan sees what it must: a Secret value planted in the message of
// an Event, both in a test namespace that is deleted when the test ends,
// is found by the scan at the end of the run, which fails if it is not
// (checkNoSecretLeaves). Other tests prove nothing leaks; this one proves
// that their proof can fail.
func TestNoSecretLeavesScanSeesAPlantedSecret(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	host := hostClient(t)
	ns := testNamespace(t, host)
	canary := "canary-" + randomValue(t)
	leaks.Canary([]byte(canary))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary"}, Data: map[string][]byte{"value": []byte(canary)}}
	createObject(t, host, secret)
	createObject(t, host, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "canary"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: "canary"},
		Reason:         "Planted", Type: corev1.EventTypeNormal,
		Message: "a secret value planted for the leak scan to find: " + canary,
	})
	eventually(t, time.Minute, "the leak scan to see the Secret and the Event", func(context.Context) (bool, string) {
		return leaks.Sees(canary), "not seen"
	})
}
