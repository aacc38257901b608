package crd

import "testing"

func TestObjects(t *testing.T) {
	t.Parallel()
	crds, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"federatedclusters.core.kubefed.io":                  "fcl",
		"federatedtypeconfigs.core.kubefed.io":               "ftc",
		"clusterpropagatedversions.types.kubefed.io":         "cpv",
		"federateddeployments.types.kubefed.io":              "fdeploy",
		"replicaschedulingpreferences.scheduling.kubefed.io": "rsp",
	}
	got := map[string]string{}
	for _, c := range crds {
		if len(c.Spec.Names.ShortNames) != 1 {
			t.Errorf("%s has short names %v, want one", c.Name, c.Spec.Names.ShortNames)
			continue
		}
		got[c.Name] = c.Spec.Names.ShortNames[0]
		if c.Spec.Versions[0].Subresources == nil || c.Spec.Versions[0].Subresources.Status == nil {
			t.Errorf("%s has no status subresource", c.Name)
		}
	}
	for name, short := range want {
		if got[name] != short {
			t.Errorf("CRD %s: short name %q, want %q", name, got[name], short)
		}
	}
	if len(got) != len(want) {
		t.Errorf("embedded CRDs %v, want exactly %v", got, want)
	}
}
