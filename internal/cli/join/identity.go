package join

import (
	"context"
	"io"
	"time"

	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// CreatePushIdentity creates, or updates, the host's identity in the
// member of a Push cluster exactly as join does, for commands that join a
// cluster otherwise (`fedwarden migrate kubefed --rejoin`): it applies the
// member objects of spec (registration.NewMember) through member, granting
// rights on every resource the member serves when spec lists none, waits
// up to timeout for the member's token controller to fill in the token
// Secret, and returns the token. The token is never printed; progress
// lines, prefixed with the cluster name, go to out. spec must be valid.
func CreatePushIdentity(ctx context.Context, member *kubeconfig.Cluster, spec registration.Spec, out io.Writer, timeout time.Duration) ([]byte, error) {
	if len(spec.Resources) == 0 {
		resources, err := servedResources(member, timeout)
		if err != nil {
			return nil, err
		}
		spec.Resources = resources
	}
	c, err := member.Client(timeout)
	if err != nil {
		return nil, err
	}
	j := &joiner{
		spec:    spec,
		member:  &applier{Applier: manifest.Applier{Client: c, Side: "member"}, cluster: spec.Name, out: out},
		out:     out,
		timeout: timeout,
	}
	if err := j.applyMember(ctx); err != nil {
		return nil, err
	}
	creds, err := j.waitForToken(ctx)
	return creds.Token, err
}
