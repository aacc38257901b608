package kyvernotest

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// webhookAddr is where the admission controller serves its webhooks. With
// --serverIP, the webhook URLs Kyverno registers carry no port, so the API
// server calls https://127.0.0.1:443 and the controller must listen there.
const webhookAddr = "127.0.0.1:443"

// checkWebhookPort fails, saying what to do, unless this process can bind
// webhookAddr now: 443 is below 1024, so binding it takes root or the
// capability CAP_NET_BIND_SERVICE, which the admission controller inherits
// from the test only when it is in the ambient set. It is checked before
// anything slow starts, rather than found in the controller's log later.
// listen is net.Listen but in tests.
func checkWebhookPort(listen func(network, address string) (net.Listener, error)) error {
	l, err := listen("tcp", webhookAddr)
	switch {
	case err == nil:
		return l.Close()
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("kyverno's admission controller must serve its webhooks on %s (with --serverIP their URLs carry no port), and this process may not bind it: %w; "+
			"run the test as root, or grant it CAP_NET_BIND_SERVICE as an ambient capability, which kyverno-admission inherits", webhookAddr, err)
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("kyverno's admission controller must serve its webhooks on %s (with --serverIP their URLs carry no port), and another program holds it: %w; "+
			"only one Kyverno test bed can run on a machine at a time: wait until the other ends, or stop the server on port 443", webhookAddr, err)
	default:
		return fmt.Errorf("checking that kyverno's admission controller can serve its webhooks on %s: %w", webhookAddr, err)
	}
}
