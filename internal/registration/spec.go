package registration

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

// maxZones is the most zones a FederatedCluster may list.
const maxZones = 32

// Spec is what a join says about a cluster; the objects are built from it.
type Spec struct {
	// Name is the cluster's name in the federation, a DNS-1123 label.
	Name string
	// Namespace is the control-plane namespace, the same on both sides.
	Namespace string
	// APIEndpoint is the member API server's https URL.
	APIEndpoint string
	// CABundle is the PEM of the CAs that sign the member API server's
	// certificate; empty means the host's system roots.
	CABundle []byte
	// SyncMode is Push or Pull.
	SyncMode v1beta1.SyncMode
	// Region the cluster runs in; may be empty.
	Region string
	// Zones the cluster spans; may be empty.
	Zones []string
	// Labels are extra labels of the FederatedCluster.
	Labels map[string]string
	// Resources limits the member's rights to these resources; empty means
	// every resource (see the package documentation).
	Resources []Resource
	// PropagateRBAC grants bind and escalate on roles and clusterroles, so
	// that RBAC objects can be propagated. It amounts to cluster-admin on
	// the member (see the package documentation).
	PropagateRBAC bool
}

// reservedLabels are the labels set from the spec, which Labels may not set.
var reservedLabels = map[string]string{
	v1beta1.LabelCluster: "it is set to the cluster name",
	v1beta1.LabelRegion:  "it is set from the region",
	v1beta1.LabelZone:    "it is set from the zone",
	LabelManagedBy:       "it is set to " + ManagedBy,
}

// Validate returns every problem of the spec, or nil.
func (s Spec) Validate() error {
	return errors.Join(
		ValidateName(s.Name),
		ValidateNamespace(s.Namespace),
		ValidateEndpoint(s.APIEndpoint),
		validateCABundle(s.CABundle),
		validateSyncMode(s.SyncMode),
		validateRegion(s.Region),
		validateZones(s.Zones),
		validateLabels(s.Labels),
		validateResources(s.Resources),
	)
}

// ValidateName checks that name can name a member cluster: a DNS-1123
// label, as the names of the objects built from it need.
func ValidateName(name string) error {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("cluster name %q is not valid: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

// ValidateNamespace checks that ns can name the control-plane namespace.
func ValidateNamespace(ns string) error {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("namespace %q is not valid: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}

// ValidateEndpoint checks that endpoint is an https URL with a host:
// Fedwarden verifies the member API server's certificate.
func ValidateEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("member API endpoint %q is not a URL: %w", endpoint, err)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("member API endpoint %q does not use https: Fedwarden verifies the member's certificate, "+
			"so it needs an https:// server and a kubeconfig with certificate-authority-data", endpoint)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("member API endpoint %q has no host", endpoint)
	}
	return nil
}

func validateCABundle(bundle []byte) error {
	if len(bundle) == 0 {
		return nil
	}
	if err := clustercache.CheckCABundle(bundle); err != nil {
		return fmt.Errorf("member CA bundle: %w", err)
	}
	return nil
}

func validateSyncMode(mode v1beta1.SyncMode) error {
	switch mode {
	case v1beta1.SyncModePush, v1beta1.SyncModePull:
		return nil
	default:
		return fmt.Errorf("sync mode %q is not valid: use %s or %s", mode, v1beta1.SyncModePush, v1beta1.SyncModePull)
	}
}

func validateRegion(region string) error {
	if msgs := validation.IsValidLabelValue(region); len(msgs) > 0 {
		return fmt.Errorf("region %q is not valid: %s", region, strings.Join(msgs, "; "))
	}
	return nil
}

func validateZones(zones []string) error {
	if len(zones) > maxZones {
		return fmt.Errorf("%d zones given, at most %d are allowed", len(zones), maxZones)
	}
	seen := make(map[string]bool, len(zones))
	var errs []error
	for _, z := range zones {
		if msgs := validation.IsValidLabelValue(z); len(msgs) > 0 || z == "" {
			errs = append(errs, fmt.Errorf("zone %q is not valid: %s", z, orEmpty(msgs)))
		}
		if seen[z] {
			errs = append(errs, fmt.Errorf("zone %q is given twice", z))
		}
		seen[z] = true
	}
	return errors.Join(errs...)
}

func validateLabels(labels map[string]string) error {
	var errs []error
	for k, v := range labels {
		if why, ok := reservedLabels[k]; ok {
			errs = append(errs, fmt.Errorf("label %q cannot be given: %s", k, why))
			continue
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("label key %q is not valid: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("value %q of label %q is not valid: %s", v, k, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

func validateResources(resources []Resource) error {
	var errs []error
	for _, r := range resources {
		errs = append(errs, r.validate())
	}
	return errors.Join(errs...)
}

func orEmpty(msgs []string) string {
	if len(msgs) == 0 {
		return "it must not be empty"
	}
	return strings.Join(msgs, "; ")
}
