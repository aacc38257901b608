package render

import (
	"testing"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func TestNextVersions(t *testing.T) {
	tests := []struct {
		name                 string
		st                   typesv1beta1.ClusterPropagatedVersionStatus
		templateH, overrideH string
		wantT, wantO         typesv1beta1.Version
	}{
		{name: "first sync", templateH: "t1", overrideH: "o1", wantT: "1", wantO: "1"},
		{name: "nothing changed (a restart)", st: typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "3", OverrideVersion: "2", TemplateHash: "t", OverrideHash: "o"}, templateH: "t", overrideH: "o", wantT: "3", wantO: "2"},
		{name: "template changed", st: typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "3", OverrideVersion: "2", TemplateHash: "t", OverrideHash: "o"}, templateH: "t2", overrideH: "o", wantT: "4", wantO: "2"},
		{name: "overrides changed", st: typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "3", OverrideVersion: "2", TemplateHash: "t", OverrideHash: "o"}, templateH: "t", overrideH: "o2", wantT: "3", wantO: "3"},
		{name: "a revert is a new version", st: typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "4", OverrideVersion: "1", TemplateHash: "t2", OverrideHash: "o"}, templateH: "t", overrideH: "o", wantT: "5", wantO: "1"},
		{name: "a garbled counter starts again", st: typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "x", TemplateHash: "t"}, templateH: "t", overrideH: "o", wantT: "1", wantO: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NextVersions(tt.st, tt.templateH, tt.overrideH)
			if v.Template != tt.wantT || v.Override != tt.wantO || v.TemplateHash != tt.templateH || v.OverrideHash != tt.overrideH {
				t.Errorf("got %+v, want template %s override %s", v, tt.wantT, tt.wantO)
			}
		})
	}
}
