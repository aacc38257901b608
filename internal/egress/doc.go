// Package egress limits where Fedwarden's member clients may connect: a
// dialer that refuses, before any packet leaves the process, an address
// outside the networks an operator allows (`--member-networks`). A
// FederatedCluster's apiEndpoint is data that anyone who may edit the
// object controls; the allowlist keeps the controller from being pointed
// at arbitrary hosts, and keeps test beds on loopback by construction.
package egress
