// Package hostcache says what the controller-manager and the Pull agents
// cache of the host: the cache options `fedwarden controller-manager` and
// the in-process test beds build their manager with, the transform that
// keeps out of memory what no controller reads and holds federated
// resources as JSON, and Keys, which lists names without a decode.
package hostcache
