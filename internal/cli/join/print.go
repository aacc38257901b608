package join

import (
	"fmt"
	"io"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// printObjects prints the objects a join of spec would create, the
// member's then the host's, as a YAML stream or a JSON List. The host
// Secret holds placeholders instead of credentials.
func printObjects(w io.Writer, spec registration.Spec, format string) error {
	host := registration.NewHost(spec, registration.Credentials{})
	host.Credentials.Data = nil
	host.Credentials.StringData = placeholders(spec)
	return manifest.PrintObjects(w, format, append(registration.NewMember(spec).Objects(), host.Objects()...))
}

// placeholders stand for the credentials, which a dry run does not read.
func placeholders(spec registration.Spec) map[string]string {
	return map[string]string{
		v1beta1.SecretTokenKey: fmt.Sprintf("<token of ServiceAccount %s/%s, read from the member at join time>",
			spec.Namespace, registration.ServiceAccountName(spec.Name)),
		v1beta1.SecretCAKey: fmt.Sprintf("<ca.crt of Secret %s/%s, read from the member at join time>",
			spec.Namespace, registration.TokenSecretName(spec.Name)),
	}
}

// printPullObjects prints the objects a join of the Pull cluster of spec
// would create, the host's then the member's, as printObjects does. The
// member Secret holds a placeholder instead of the kubeconfig.
func printPullObjects(w io.Writer, spec registration.Spec, image, format string) error {
	member := registration.NewAgentMember(spec, image, nil)
	member.Secret.Data = nil
	member.Secret.StringData = map[string]string{
		registration.AgentHostKubeconfigKey: fmt.Sprintf("<kubeconfig of the host for ServiceAccount %s/%s, written at join time>",
			spec.Namespace, registration.AgentServiceAccountName(spec.Name)),
	}
	return manifest.PrintObjects(w, format, append(registration.NewAgentHost(spec).Objects(), member.Objects()...))
}
