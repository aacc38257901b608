package egress

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

func TestParseNetworks(t *testing.T) {
	n, err := ParseNetworks([]string{"127.0.0.0/8", " 10.1.2.3 ", "", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.String(), "127.0.0.0/8,10.1.2.3/32,fd00::/8"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := ParseNetworks([]string{"member.example"}); err == nil {
		t.Error("a hostname was accepted as a network")
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		address, want string
		refused       bool
	}{
		{address: "127.0.0.1:6443", want: "127.0.0.1:6443"},
		{address: "127.45.0.9:443", want: "127.45.0.9:443"},
		{address: "localhost:8443", want: "127.0.0.1:8443"},
		{address: "[::1]:6443", want: "[::1]:6443"},
		{address: "10.0.0.1:6443", refused: true},
		{address: "[::ffff:10.0.0.1]:6443", refused: true},
		{address: "192.0.2.1:443", refused: true},
		{address: "member.example:6443", refused: true},
		{address: "[2001:db8::1]:6443", refused: true},
	}
	for _, tt := range tests {
		got, err := Loopback.Check(tt.address)
		if tt.refused {
			if !errors.Is(err, ErrRefused) {
				t.Errorf("Check(%s) = %q, %v; want an error wrapping ErrRefused", tt.address, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Check(%s) = %q, %v; want %q", tt.address, got, err, tt.want)
		}
	}
}

// TestDialerRefusesBeforeDialing checks that a refused address never reaches
// the underlying dial, that allowed ones do, and that the refusal is logged
// once with the cluster's name.
func TestDialerRefusesBeforeDialing(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	d := NewDialer(Loopback, "c1", log)
	var dialed []string
	d.dial = func(_ context.Context, _, address string) (net.Conn, error) {
		dialed = append(dialed, address)
		return nil, errors.New("stop here")
	}
	for range 3 {
		if _, err := d.DialContext(t.Context(), "tcp", "10.0.0.1:6443"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "10.0.0.1 is outside 127.0.0.0/8") {
			t.Errorf("dialing 10.0.0.1: %v, want a refusal naming the address and the networks", err)
		}
	}
	if len(dialed) != 0 {
		t.Errorf("a refused address was dialed: %v", dialed)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], RefusedMessage) || !strings.Contains(logged[0], `"cluster"="c1"`) {
		t.Errorf("logged %q, want one line with %q and the cluster", logged, RefusedMessage)
	}
	_, _ = d.DialContext(t.Context(), "tcp", "localhost:6443")
	if len(dialed) != 1 || dialed[0] != "127.0.0.1:6443" {
		t.Errorf("dialed %v, want [127.0.0.1:6443]", dialed)
	}
}

// TestDialerWithoutNetworksAllowsAll: no --member-networks, no limit.
func TestDialerWithoutNetworksAllowsAll(t *testing.T) {
	d := NewDialer(nil, "c1", logr.Discard())
	var dialed string
	d.dial = func(_ context.Context, _, address string) (net.Conn, error) {
		dialed = address
		return nil, errors.New("stop here")
	}
	_, _ = d.DialContext(t.Context(), "tcp", "member.example:6443")
	if dialed != "member.example:6443" {
		t.Errorf("dialed %q, want member.example:6443", dialed)
	}
}

// TestDialerConnectsToLoopback: a real listener on 127.0.0.1 is reached.
func TestDialerConnectsToLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err := NewDialer(Loopback, "c1", logr.Discard()).DialContext(t.Context(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dialing %s: %v", l.Addr(), err)
	}
	conn.Close()
}
