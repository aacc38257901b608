package join

import (
	"fmt"
	"io"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/manifest"
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
