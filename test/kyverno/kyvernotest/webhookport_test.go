package kyvernotest

import (
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestCheckWebhookPort(t *testing.T) {
	t.Parallel()
	listenErr := func(errno syscall.Errno) func(string, string) (net.Listener, error) {
		return func(network, address string) (net.Listener, error) {
			return nil, &net.OpError{Op: "listen", Net: network, Err: os.NewSyscallError("bind", errno)}
		}
	}
	tests := []struct {
		name   string
		listen func(string, string) (net.Listener, error)
		want   []string // in the error; none: no error
	}{
		{name: "free", listen: func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") }},
		{name: "not root", listen: listenErr(syscall.EACCES), want: []string{"127.0.0.1:443", "permission denied", "root", "CAP_NET_BIND_SERVICE"}},
		{name: "taken", listen: listenErr(syscall.EADDRINUSE), want: []string{"127.0.0.1:443", "address already in use", "one Kyverno test bed"}},
		{name: "other", listen: listenErr(syscall.EINVAL), want: []string{"127.0.0.1:443", "invalid argument"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var addr string
			err := checkWebhookPort(func(network, address string) (net.Listener, error) {
				addr = address
				return tt.listen(network, address)
			})
			if addr != "127.0.0.1:443" {
				t.Errorf("bound %q, want 127.0.0.1:443", addr)
			}
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("checkWebhookPort: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("checkWebhookPort succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
