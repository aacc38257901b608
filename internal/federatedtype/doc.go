// Package federatedtype builds what enabling federation of a kind takes,
// as KubeFed's `kubefedctl enable` did: the FederatedTypeConfig of the
// target kind and the CustomResourceDefinition of its Federated<Kind>, whose
// spec.template schema is converted from the host's OpenAPI v3 document.
// It also finds target kinds in the host's discovery the way kubectl does.
// A networking.k8s.io/v1 Ingress template also accepts the extensions/v1beta1
// shape of KubeFed's manifests, which propagation converts to v1.
//
// Construction is pure (NewTypeConfig, NewCRD, TemplateSchema); only
// Resolve, FetchOpenAPI and FetchTemplateSchema talk to a cluster, through
// its discovery client.
package federatedtype
