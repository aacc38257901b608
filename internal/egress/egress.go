package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// ErrRefused is wrapped by every error of a connection the dialer refused.
var ErrRefused = errors.New("refused by --member-networks")

// RefusedMessage is the message logged when a connection is refused; test
// beds look for it in the controller-manager's log.
const RefusedMessage = "Refused a connection to a member outside --member-networks"

// Networks is the set of networks member API servers may be reached at.
// The empty set allows any address.
type Networks []netip.Prefix

// Loopback is 127.0.0.0/8 and ::1: a test bed on one machine.
var Loopback = Networks{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// ParseNetworks parses CIDRs ("10.0.0.0/8") and single addresses
// ("192.0.2.7", taken as a /32 or /128).
func ParseNetworks(list []string) (Networks, error) {
	var n Networks
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			n = append(n, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
		}
		n = append(n, netip.PrefixFrom(a, a.BitLen()))
	}
	return n, nil
}

// String lists the networks, comma-separated.
func (n Networks) String() string {
	s := make([]string, len(n))
	for i, p := range n {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// Contains reports whether ip is in one of the networks.
func (n Networks) Contains(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range n {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Check returns the address to dial for address (host:port), or an error
// wrapping ErrRefused when it is outside the networks. A hostname is refused
// without being looked up, so that no DNS query leaves either; only
// "localhost" is taken, as 127.0.0.1.
func (n Networks) Check(address string) (string, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return "", fmt.Errorf("%s: %w", address, err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", fmt.Errorf("%s is a hostname, and only IP addresses in %s are allowed: %w", host, n, ErrRefused)
	}
	if !n.Contains(ip) {
		return "", fmt.Errorf("%s is outside %s: %w", ip, n, ErrRefused)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// DialFunc dials a network address, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Dialer connects to addresses in Networks and refuses every other one,
// counting and logging the refusal (once per Dialer, so that a retrying
// client does not flood the log; the counter sees every one).
type Dialer struct {
	networks Networks
	cluster  string
	log      logr.Logger
	dial     DialFunc
	logged   sync.Once
}

// NewDialer returns a dialer for the member cluster's clients. With no
// networks it allows every address.
func NewDialer(networks Networks, cluster string, log logr.Logger) *Dialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &Dialer{networks: networks, cluster: cluster, log: log, dial: d.DialContext}
}

// DialContext dials address when it is allowed.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if len(d.networks) == 0 {
		return d.dial(ctx, network, address)
	}
	allowed, err := d.networks.Check(address)
	if err != nil {
		refused.WithLabelValues(d.cluster).Inc()
		d.logged.Do(func() {
			d.log.Info(RefusedMessage, "cluster", d.cluster, "address", address, "networks", d.networks.String(), "reason", err.Error())
		})
		return nil, err
	}
	return d.dial(ctx, network, allowed)
}
