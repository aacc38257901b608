package join

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// managedByHelm is the value of the managed-by label of the objects a Helm
// release installs.
const managedByHelm = "Helm"

// agentSettings are the flags of pull mode.
type agentSettings struct {
	kubeconfig    string // where to write the agent's kubeconfig of the host
	image         string
	printManifest bool
	host          registration.HostEndpoint
}

// joinPull joins a Pull cluster: the agent's identity, rights and Lease on
// the host, its kubeconfig of the host, then the agent in the member (or
// its manifest).
func (j *joiner) joinPull(ctx context.Context) error {
	if err := j.applyAgentHost(ctx); err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: j.spec.Namespace, Name: registration.AgentTokenSecretName(j.spec.Name)}
	token, err := j.host.waitForToken(ctx, key, j.timeout)
	if err != nil {
		return err
	}
	kubeconfig, err := registration.AgentKubeconfig(j.spec, j.agent.host, token)
	if err != nil {
		return err
	}
	if err := writePrivateFile(j.agent.kubeconfig, kubeconfig); err != nil {
		return fmt.Errorf("writing the agent's kubeconfig: %w", err)
	}
	fmt.Fprintf(j.out, "%s: wrote the agent's kubeconfig of the host to %s\n", j.spec.Name, j.agent.kubeconfig)
	member := registration.NewAgentMember(j.spec, j.agent.image, kubeconfig)
	if j.agent.printManifest {
		if err := j.printAgentManifest(member); err != nil {
			return err
		}
		return j.finish(ctx)
	}
	for _, obj := range member.Objects() {
		if _, err := j.member.apply(ctx, obj, fieldOwner); err != nil {
			return err
		}
	}
	return j.finish(ctx)
}

// applyAgentHost applies the host's objects of a Pull cluster, in order.
// The objects every agent shares are left alone when a Helm release
// installed them. A credentials Secret left by an earlier Push join is
// deleted: the host holds no credentials of a Pull cluster.
func (j *joiner) applyAgentHost(ctx context.Context) error {
	h := registration.NewAgentHost(j.spec)
	shared := map[client.Object]bool{h.ClusterRole: true, h.Policy: true, h.PolicyBinding: true}
	for _, obj := range h.Objects() {
		if shared[obj] {
			helm, err := j.host.managedByHelm(ctx, obj)
			if err != nil {
				return err
			}
			if helm {
				fmt.Fprintf(j.out, "%s: %s is installed by Helm; left as it is\n", j.spec.Name, manifest.Describe(obj))
				continue
			}
		}
		if _, err := j.host.apply(ctx, obj, fieldOwner); err != nil {
			return err
		}
	}
	return j.removeCredentials(ctx)
}

// managedByHelm reports whether obj exists and a Helm release manages it.
func (a *applier) managedByHelm(ctx context.Context, obj client.Object) (bool, error) {
	meta, err := a.metadata(ctx, obj)
	if err != nil || meta == nil {
		return false, err
	}
	return meta.Labels[registration.LabelManagedBy] == managedByHelm, nil
}

// metadata reads the metadata of the object obj names, or nil when it does
// not exist: never a Secret's data.
func (a *applier) metadata(ctx context.Context, obj client.Object) (*metav1.PartialObjectMetadata, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	err := a.Client.Get(ctx, client.ObjectKeyFromObject(obj), meta)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s on the %s: %w", manifest.Describe(obj), a.Side, err)
	}
	return meta, nil
}

// removeCredentials deletes the host credentials Secret of the cluster, which
// a Push join made.
func (j *joiner) removeCredentials(ctx context.Context) error {
	secret := &corev1.Secret{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	secret.Namespace, secret.Name = j.spec.Namespace, registration.CredentialsSecretName(j.spec.Name)
	meta, err := j.host.metadata(ctx, secret)
	if err != nil || meta == nil || meta.Labels[v1beta1.LabelCluster] != j.spec.Name {
		return err
	}
	if err := j.host.Client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s on the host: %w", manifest.Describe(secret), err)
	}
	fmt.Fprintf(j.out, "%s: deleted %s on the host: a Pull cluster has no credentials there\n", j.spec.Name, manifest.Describe(secret))
	return nil
}

// printAgentManifest prints the member's manifest, but for the Secret
// holding the kubeconfig, and tells how to create that Secret.
func (j *joiner) printAgentManifest(m *registration.AgentMember) error {
	var objs []client.Object
	for _, obj := range m.Objects() {
		if obj != m.Secret {
			objs = append(objs, obj)
		}
	}
	if err := manifest.PrintObjects(j.stdout, manifest.YAML, objs); err != nil {
		return err
	}
	fmt.Fprintf(j.out, "%s: nothing was applied to the member. Apply the manifest printed above to it, "+
		"then create the Secret holding the agent's kubeconfig of the host:\n"+
		"  kubectl -n %s create secret generic %s --from-file=%s=%s\n",
		j.spec.Name, j.spec.Namespace, registration.AgentHostKubeconfigSecretName, registration.AgentHostKubeconfigKey, j.agent.kubeconfig)
	return nil
}

// writePrivateFile writes data to path, readable by its owner only,
// replacing any file there.
func writePrivateFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
