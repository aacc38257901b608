// Package render turns a Federated<Kind> into the copy one member cluster
// should have: it reads the federated spec, applies the cluster's overrides
// to the template (converting KubeFed's legacy Ingress shape), and computes
// the template and override hashes and the versions they stand for. It is
// pure: it reads no cluster and writes nothing.
package render
