package agent

import (
	"strings"
	"testing"
	"time"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

func validOptions() Options {
	return Options{
		Cluster: "edge-1", Namespace: "kube-federation-system", Holder: "agent-0",
		LeaseDuration: 40 * time.Second, RenewInterval: 10 * time.Second,
		Propagation: propagation.Options{Workers: 4, RetryPeriod: time.Second, MemberListTimeout: time.Second, DefaultRemediation: typesv1beta1.RemediationEnforce},
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"valid", func(*Options) {}, ""},
		{"no cluster name", func(o *Options) { o.Cluster = "" }, "--cluster-name"},
		{"cluster name not a DNS label", func(o *Options) { o.Cluster = "Edge_1" }, "--cluster-name"},
		{"lease shorter than two renewals", func(o *Options) { o.LeaseDuration = 15 * time.Second }, "at least twice"},
		{"shortest lease", func(o *Options) { o.LeaseDuration, o.RenewInterval = 10*time.Second, 5*time.Second }, ""},
		{"longest lease", func(o *Options) { o.LeaseDuration = 10 * time.Minute }, ""},
		{"lease too short for the host", func(o *Options) { o.LeaseDuration, o.RenewInterval = 9*time.Second, time.Second }, "--lease-duration must be between 10s and 10m0s, got 9s"},
		{"lease too long for the host", func(o *Options) { o.LeaseDuration = 601 * time.Second }, "refuses any other Lease duration"},
		{"no workers", func(o *Options) { o.Propagation.Workers = 0 }, "--workers"},
		{"unknown remediation", func(o *Options) { o.Propagation.DefaultRemediation = "Ignore" }, `not "Ignore"`},
		{"negative waiver maximum", func(o *Options) { o.Propagation.MaxWaiver = -time.Hour }, "--max-waiver-duration must not be negative"},
		{"a waiver maximum", func(o *Options) { o.Propagation.MaxWaiver = 48 * time.Hour }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.change(&o)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
