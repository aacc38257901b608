package shard

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := DefaultOptions()
	valid.Identity = "fedwarden-controller-manager-7d9f8-x2x4q"
	if err := valid.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"no identity", func(o *Options) { o.Identity = "" }, "identity must not be empty"},
		{"an identity that is no name", func(o *Options) { o.Identity = "CM_1" }, "does not make a valid Lease name"},
		{"no namespace", func(o *Options) { o.Namespace = "" }, "namespace"},
		{"deadline not under the duration", func(o *Options) { o.RenewDeadline = o.LeaseDuration }, "retry period < renew deadline < lease duration"},
		{"retry not under the deadline", func(o *Options) { o.RetryPeriod = o.RenewDeadline }, "retry period < renew deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := valid
			tc.change(&o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	o := valid
	o.LeaseDuration = 2500 * time.Millisecond
	if s := o.leaseSeconds(); s != 3 {
		t.Errorf("a duration of 2.5 s is written as %d s, want 3 (rounded up)", s)
	}
}
