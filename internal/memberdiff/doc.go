// Package memberdiff compares a federated resource's copy in a member
// cluster with the copy the control plane wants there, as the drift
// controller tells drift, and shows the difference with a Secret's values
// redacted. `fedwarden diff` prints it; `fedwarden console` shows it.
//
// The members are read with the credentials the host keeps for them, read
// from the host with the caller's identity: whoever may not read those
// credentials cannot compare.
package memberdiff
