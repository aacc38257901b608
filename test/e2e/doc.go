// Package e2e holds Fedwarden's end-to-end tests: each file exercises one
// feature against real etcd and kube-apiserver processes started by
// internal/localfed, as a user of the federation would.
package e2e
