// Package typeconfig is the federation controller: for every
// FederatedTypeConfig whose propagation is Enabled and whose types the host
// serves, it runs a propagation controller, and stops it when the type is
// disabled or its FederatedTypeConfig deleted — without restarting the
// controller-manager. The FederatedTypeConfig's status says whether it runs:
// Running once it has listed its federated resources, NotRunning with the
// error while it cannot, or after it stopped by itself (it is then started
// again). It also tells the propagation controllers whether namespaces are
// federated, from the FederatedTypeConfigs rather than from which
// controllers have started.
package typeconfig
