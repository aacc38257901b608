package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// cloudEventReceiver is a webhook on 127.0.0.1 that keeps the CloudEvents
// it is sent.
type cloudEventReceiver struct {
	*webhook
	mu     sync.Mutex
	events []receivedEvent
}

type receivedEvent struct {
	contentType string
	raw         []byte
	event       notify.CloudEvent
}

func newCloudEventReceiver(t *testing.T) *cloudEventReceiver {
	t.Helper()
	r := &cloudEventReceiver{}
	r.webhook = startWebhook(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var ev notify.CloudEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.events = append(r.events, receivedEvent{contentType: req.Header.Get("Content-Type"), raw: raw, event: ev})
		r.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	return r
}

// webhook is an HTTP server on a free port of 127.0.0.1, as a user's
// receiver would be, stopped when the test ends (or by Close).
type webhook struct {
	URL    string
	server *http.Server
}

func startWebhook(t *testing.T, h http.Handler) *webhook {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &webhook{URL: "http://" + ln.Addr().String(), server: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = w.server.Serve(ln) }()
	t.Cleanup(w.Close)
	return w
}

// Close stops the server and drops its open connections.
func (w *webhook) Close() { _ = w.server.Close() }

// waitFor waits for an event of kind about the copy of namespace/name.
func (r *cloudEventReceiver) waitFor(t *testing.T, kind notify.Kind, namespace, name string) receivedEvent {
	t.Helper()
	var got receivedEvent
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("a %s event about %s/%s", kind, namespace, name), func(context.Context) (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		var seen []string
		for _, e := range r.events {
			d := e.event.Data
			if e.event.Type == kind && d.Resource.Namespace == namespace && d.Resource.Name == name {
				got = e
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s %s/%s", e.event.Type, d.Resource.Namespace, d.Resource.Name))
		}
		return false, fmt.Sprint("received: ", seen)
	})
	return got
}

// newHungSink is a webhook on 127.0.0.1 that accepts connections and never
// answers, until the test ends.
func newHungSink(t *testing.T) *webhook {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return startWebhook(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
}

// A hand edit in a member reaches a webhook as a CloudEvent naming the
// cluster, state, path and manager: left under Alert, healed under Enforce.
// A webhook that never answers fills its queue and drops, and one that is
// down fails, while drift is still healed and reported. This test has a
// controller-manager with webhooks, so it has a test bed of its own.
func TestDriftNotifications(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	receiver, hung := newCloudEventReceiver(t), newHungSink(t)
	bed, manager := startJoinedBed(t, fedtest.Options{Federation: []localfed.Option{localfed.WithMembers(1)}}, steadyProbes,
		"--notify-webhook", receiver.URL+"/hook kind=Deployment",
		"--notify-webhook", hung.URL+"/hook",
		"--notify-queue-size", "1", "--notify-timeout", "10m", "--notify-attempts", "2",
		"--console-url", "https://127.0.0.1:9/console")
	m := bed.Fed.Members[0]
	host, member := bed.Host, bed.Members[m.Name]
	enableDeploymentsIn(t, host)
	ns := testNamespace(t, host)
	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m.Name)))
	createObject(t, host, newFederatedDeployment(t, ns, "api", 0, placedOn(m.Name)+"\n  driftPolicy: {remediation: Alert}"))
	for _, name := range []string{"web", "api"} {
		waitForCPV(t, host, ns, "deployment-"+name, "1", "1", m.Name)
		waitForSettled(t, member, m.Name, ns, name)
	}

	// Under Alert: the event names what a person would look for.
	editImage(t, member, ns, "api", "nginx:hotfix")
	alerted := receiver.waitFor(t, notify.Alerted, ns, "api")
	t.Logf("the CloudEvent received:\n%s", alerted.raw)
	checkDriftEvent(t, alerted, m.Name, typesv1beta1.RemediationAlert)
	if want := "/apis/types.kubefed.io/v1beta1/namespaces/" + ns + "/federateddeployments/api"; alerted.event.Source != want {
		t.Errorf("source %q, want %q", alerted.event.Source, want)
	}
	if link := alerted.event.Data.ConsoleURL; !strings.HasPrefix(link, "https://127.0.0.1:9/console/resource?") || !strings.Contains(link, "cluster="+m.Name) {
		t.Errorf("console link %q", link)
	}

	// Under Enforce: healed, and written back.
	editImage(t, member, ns, "web", "nginx:evil")
	checkDriftEvent(t, receiver.waitFor(t, notify.Healed, ns, "web"), m.Name, typesv1beta1.RemediationEnforce)
	waitForImage(t, member, ns, "web", "nginx:1.27")

	// The receiver goes down: drift is still healed and reported, and the
	// event counted as failed once its attempts are spent.
	receiver.Close()
	editImage(t, member, ns, "web", "nginx:evil-again")
	waitForImage(t, member, ns, "web", "nginx:1.27")
	waitForEntry(t, host, ns, "deployment-web", m.Name, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.InSync })
	waitForCount(t, manager, "fedwarden_notifications_failed_total", `sink="0"`)
	// The hung webhook holds its first event, queues the second, and
	// drops the third.
	waitForCount(t, manager, "fedwarden_notifications_dropped_total", `sink="1"`)
}

// checkDriftEvent checks an event about a hand edit of the image in cluster.
func checkDriftEvent(t *testing.T, e receivedEvent, cluster string, remediation typesv1beta1.Remediation) {
	t.Helper()
	ev, d := e.event, e.event.Data
	if e.contentType != notify.ContentType || ev.SpecVersion != "1.0" || ev.Subject != cluster || ev.ID == "" {
		t.Errorf("envelope %+v, Content-Type %q", ev, e.contentType)
	}
	if d.Cluster != cluster || d.State != typesv1beta1.ModifiedOutOfBand || !slices.Equal(d.Paths, []string{imagePath}) ||
		!slices.Equal(d.Managers, []string{"kubectl-edit"}) || d.Remediation != remediation {
		t.Errorf("data %+v, want %s ModifiedOutOfBand at %s by kubectl-edit, %s", d, cluster, imagePath, remediation)
	}
	if d.Resource.Group != "apps" || d.Resource.Kind != "Deployment" || d.Federated.Kind != "FederatedDeployment" || d.TemplateVersion != "1" || d.OverrideVersion != "1" {
		t.Errorf("data %+v", d)
	}
}

// waitForImage waits until the member's Deployment has image.
func waitForImage(t *testing.T, member client.Client, namespace, name, image string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("the image of %s/%s to be %s", namespace, name, image), func(ctx context.Context) (bool, string) {
		img, err := memberImage(ctx, member, namespace, name)
		return err == nil && img == image, fmt.Sprint(img, err)
	})
}

// waitForCount waits until the counter name, summed over the series with
// labels, is at least 1.
func waitForCount(t *testing.T, cm *controllerManager, name string, labels ...string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("%s%v to count", name, labels), func(ctx context.Context) (bool, string) {
		v, _, err := cm.Sum(ctx, name, labels...)
		return err == nil && v >= 1, fmt.Sprint(v, err)
	})
}
