// Package helm tests the Helm chart deploy/helm/fedwarden as a platform team
// would meet it: rendered and linted by a real helm, every object accepted by
// a real kube-apiserver, and the settings a reviewer checks in place.
package helm
