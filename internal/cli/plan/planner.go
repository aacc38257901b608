package plan

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/dependencies"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/scheduler"
)

// userAgent is the user agent of plan's requests to the members.
const userAgent = "fedwarden-plan"

// planner plans changes to the federated resources of one host. It only
// reads the host, and sends the members nothing but reads and dry runs.
type planner struct {
	host         client.Reader
	disco        discovery.DiscoveryInterface
	members      *memberdiff.Members
	scheduler    *scheduler.Scheduler
	controlPlane string
	timeout      time.Duration
	// remediation is the default drift remediation of the controller.
	remediation typesv1beta1.Remediation
	// configs are the host's FederatedTypeConfigs, once subjects has read
	// them.
	configs []corev1beta1.FederatedTypeConfig
	// planned are the resources of -f, as the place stage sees them;
	// scheme types them.
	planned []*unstructured.Unstructured
	scheme  *runtime.Scheme
	// dependencies is the controller's dependencies stage, which plan
	// only asks (Plan).
	dependencies *dependencies.Stage
	// down are the clusters planned as failed (--what-if-down).
	down []string
}

func newPlanner(host *kubeconfig.Cluster, o *options) (*planner, error) {
	c, disco, err := host.Clients(o.timeout)
	if err != nil {
		return nil, err
	}
	// No capacity source: the Capacity plugin passes every cluster, and the
	// report says that capacity was not considered.
	sched, err := scheduler.New(o.plugins, nil)
	if err != nil {
		return nil, fmt.Errorf("--plugins: %w", err)
	}
	return &planner{
		host: c, disco: disco, scheme: c.Scheme(), members: memberdiff.NewMembers(o.controlPlane, o.networks, userAgent), scheduler: sched,
		controlPlane: o.controlPlane, timeout: o.timeout, remediation: typesv1beta1.Remediation(o.remediation),
		dependencies: dependencies.NewStage(c, c, nil), down: o.down,
	}, nil
}
