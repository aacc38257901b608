package memberdiff

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/egress"
)

// Flags are the flags of a command that reads member clusters with the
// credentials the host keeps for them (fedwarden diff, drift codify): where
// those live, and where members may be reached.
type Flags struct {
	// ControlPlane is the control-plane namespace of the host.
	ControlPlane string
	// Networks are where members may be reached, once Validate parsed them.
	Networks   egress.Networks
	memberNets []string
}

// Add adds the flags to fs.
func (f *Flags) Add(fs *pflag.FlagSet) {
	fs.StringVar(&f.ControlPlane, "control-plane-namespace", corev1beta1.DefaultFederationNamespace,
		"control-plane namespace of the host: the members' credential Secrets, and the ClusterPropagatedVersions of cluster-scoped resources")
	fs.StringSliceVar(&f.memberNets, "member-networks", nil, "CIDRs member API servers may be reached at, as the controller-manager's flag of that name; "+
		"a member outside them is reported as an error without being contacted (default: any address)")
}

// Validate checks the flags and parses --member-networks.
func (f *Flags) Validate() []error {
	var errs []error
	if msgs := validation.IsDNS1123Label(f.ControlPlane); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--control-plane-namespace: %q is not a namespace name: %s", f.ControlPlane, strings.Join(msgs, "; ")))
	}
	networks, err := egress.ParseNetworks(f.memberNets)
	if err != nil {
		errs = append(errs, fmt.Errorf("--member-networks: %w", err))
	}
	f.Networks = networks
	return errs
}

// ClusterName checks that the value of flag is a cluster's name.
func ClusterName(flag, name string) error {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("%s: %q is not a cluster name: %s", flag, name, strings.Join(msgs, "; "))
	}
	return nil
}
