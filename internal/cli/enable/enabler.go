package enable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// establishedPollInterval is how often the CRD's conditions are read.
const establishedPollInterval = 250 * time.Millisecond

// enabler enables types in one host.
type enabler struct {
	host    manifest.Applier
	disco   federatedtype.Discovery
	out     io.Writer // progress
	timeout time.Duration
}

func newEnabler(s streams.IO, host *kubeconfig.Cluster, timeout time.Duration) (*enabler, error) {
	c, disco, err := host.Clients(timeout)
	if err != nil {
		return nil, err
	}
	return &enabler{host: manifest.Applier{Client: c}, disco: disco, out: s.ErrOut, timeout: timeout}, nil
}

// plan is what enabling one type writes.
type plan struct {
	typ federatedtype.Type
	crd *apiextensionsv1.CustomResourceDefinition
	// shipped: the CRD ships with Fedwarden and is only created if missing.
	shipped bool
	ftc     *corev1beta1.FederatedTypeConfig
}

// name names the type in progress lines: its FederatedTypeConfig's name.
func (p *plan) name() string { return p.ftc.Name }

// plan resolves req in the host's discovery and builds its CRD and
// FederatedTypeConfig. An unknown resource is a usage error.
func (e *enabler) plan(ctx context.Context, req request) (*plan, error) {
	target, err := federatedtype.Resolve(ctx, e.disco, req.resource, req.targetVersion)
	switch {
	case errors.Is(err, federatedtype.ErrUnknownResource) && req.source != "":
		return nil, streams.UsageError(fmt.Errorf("%s: %w", req.source, err))
	case errors.Is(err, federatedtype.ErrUnknownResource):
		return nil, streams.UsageError(err)
	case err != nil:
		return nil, err
	}
	p := &plan{typ: federatedtype.Type{Target: target, FederatedGroup: req.federatedGroup, FederatedVersion: req.federatedVersion}}
	p.ftc = federatedtype.NewTypeConfig(p.typ)
	if p.crd, err = federatedtype.Shipped(p.typ); err != nil {
		return nil, err
	}
	if p.crd != nil {
		p.shipped = true
		return p, nil
	}
	p.crd, err = e.generate(ctx, p.typ)
	return p, err
}

// generate builds the CRD of typ from the host's OpenAPI v3 schema of its
// target, or, when the host publishes none, with a template that accepts
// any field.
func (e *enabler) generate(ctx context.Context, typ federatedtype.Type) (*apiextensionsv1.CustomResourceDefinition, error) {
	template, err := federatedtype.FetchTemplateSchema(ctx, e.disco, typ.Target)
	switch {
	case errors.Is(err, federatedtype.ErrNoOpenAPI):
		fmt.Fprintf(e.out, "%s: %v; spec.template of %s accepts any field (x-kubernetes-preserve-unknown-fields)\n",
			typ.Target.Resource(), err, typ.FederatedKind())
		template = nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", typ.Target.Resource(), err)
	}
	return federatedtype.NewCRD(typ, template)
}

// printPlans prints each plan's CRD and FederatedTypeConfig.
func printPlans(s streams.IO, format string, plans []*plan) error {
	objs := make([]client.Object, 0, 2*len(plans))
	for _, p := range plans {
		objs = append(objs, p.crd, p.ftc)
	}
	return manifest.PrintObjects(s.Out, format, objs)
}

// enable applies the CRD, waits until it is Established, then applies the
// FederatedTypeConfig.
func (e *enabler) enable(ctx context.Context, p *plan) error {
	if err := e.applyCRD(ctx, p); err != nil {
		return err
	}
	if err := e.waitEstablished(ctx, p); err != nil {
		return err
	}
	if err := e.applyTypeConfig(ctx, p); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "%s: enabled: create %s resources, or federate an existing %s with `fedwarden federate %s NAME`\n",
		p.name(), p.typ.FederatedKind(), p.typ.Target.Kind, strings.ToLower(p.typ.Target.Kind))
	return nil
}

// applyCRD applies the generated CRD; a CRD that ships with Fedwarden is
// left as it is when it exists.
func (e *enabler) applyCRD(ctx context.Context, p *plan) error {
	u, err := manifest.From(p.crd)
	if err != nil {
		return err
	}
	if p.shipped {
		rv, err := e.host.ResourceVersion(ctx, u)
		if err != nil {
			return err
		}
		if rv != "" {
			fmt.Fprintf(e.out, "%s: kept %s, which ships with Fedwarden\n", p.name(), manifest.Describe(u))
			return nil
		}
	}
	outcome, err := e.host.Apply(ctx, u, fieldOwner)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "%s: %s %s\n", p.name(), outcome, manifest.Describe(u))
	return nil
}

// waitEstablished waits until the CRD is Established. A CRD whose names
// are refused fails at once.
func (e *enabler) waitEstablished(ctx context.Context, p *plan) error {
	var (
		crd     = &apiextensionsv1.CustomResourceDefinition{}
		lastErr error
	)
	err := wait.PollUntilContextTimeout(ctx, establishedPollInterval, e.timeout, true, func(ctx context.Context) (bool, error) {
		if lastErr = e.getCRD(ctx, p.crd.Name, crd); lastErr != nil {
			return false, nil
		}
		if c := condition(crd, apiextensionsv1.NamesAccepted); c != nil && c.Status == apiextensionsv1.ConditionFalse {
			return false, fmt.Errorf("the API server refuses the names of CustomResourceDefinition %s: %s", p.crd.Name, c.Message)
		}
		c := condition(crd, apiextensionsv1.Established)
		return c != nil && c.Status == apiextensionsv1.ConditionTrue, nil
	})
	switch {
	case err == nil:
		fmt.Fprintf(e.out, "%s: CustomResourceDefinition %s is Established\n", p.name(), p.crd.Name)
		return nil
	case lastErr != nil:
		return fmt.Errorf("reading CustomResourceDefinition %s: %w", p.crd.Name, lastErr)
	case !wait.Interrupted(err):
		return err
	default:
		return fmt.Errorf("CustomResourceDefinition %s is not Established after %s: %s", p.crd.Name, e.timeout, conditions(crd))
	}
}

// getCRD reads a CRD into crd. The client's scheme does not know CRDs: it
// reads them unstructured.
func (e *enabler) getCRD(ctx context.Context, name string, crd *apiextensionsv1.CustomResourceDefinition) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := e.host.Client.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd)
}

func condition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i, c := range crd.Status.Conditions {
		if c.Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// conditions says what a CRD's conditions say.
func conditions(crd *apiextensionsv1.CustomResourceDefinition) string {
	if len(crd.Status.Conditions) == 0 {
		return "it has no conditions yet"
	}
	var parts []string
	for _, c := range crd.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s is %s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// applyTypeConfig applies the FederatedTypeConfig, which turns propagation
// back on if it was Disabled.
func (e *enabler) applyTypeConfig(ctx context.Context, p *plan) error {
	before := &corev1beta1.FederatedTypeConfig{}
	err := e.host.Client.Get(ctx, client.ObjectKey{Name: p.ftc.Name}, before)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading FederatedTypeConfig %s: %w", p.ftc.Name, err)
	}
	u, err := manifest.From(p.ftc)
	if err != nil {
		return err
	}
	outcome, err := e.host.Apply(ctx, u, fieldOwner)
	if err != nil {
		return err
	}
	note := ""
	if before.Spec.Propagation == corev1beta1.Disabled {
		note = " (propagation Enabled again)"
	}
	fmt.Fprintf(e.out, "%s: %s %s%s\n", p.name(), outcome, manifest.Describe(u), note)
	return nil
}
