// Package typeconfig is the federation controller: for every
// FederatedTypeConfig whose propagation is Enabled and whose types the host
// serves, it runs a propagation controller, and stops it when the type is
// disabled or its FederatedTypeConfig deleted — without restarting the
// controller-manager. The FederatedTypeConfig's status says whether it runs.
package typeconfig
