// Package hostcache says what the controller-manager caches of the host:
// the cache options `fedwarden controller-manager` and the in-process test
// beds build their manager with, and the transform that keeps out of
// memory what no controller reads.
package hostcache
