// Package plandiff is the differential test of `fedwarden plan`: it
// generates cases from a seed, each a starting state of a
// FederatedDeployment and a change to it, runs plan on the change, makes
// the change, and checks that the action plan predicted in each member
// cluster is what the propagation controller then did there.
//
// The cases run on an internal/inprocess test bed whose members are
// member-1 and member-2 (either may be a Pull cluster), with the
// propagation controller of Deployments running: the tests of
// internal/cli/plan run them on Push members, those of
// test/plandiff/pull with member-2 in Pull mode.
package plandiff
