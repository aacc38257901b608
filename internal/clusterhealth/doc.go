// Package clusterhealth is the FederatedCluster health controller: it connects to
// each member through the cluster cache, probes its API server, and keeps the
// Ready, Offline and ConfigMalformed conditions and status.kubernetesVersion
// true, writing status only when one of them changes.
package clusterhealth
