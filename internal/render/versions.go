package render

import (
	"strconv"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Versions are the control plane's current template and override versions,
// with the hashes they stand for.
type Versions struct {
	Template, Override         typesv1beta1.Version
	TemplateHash, OverrideHash string
}

// NextVersions returns the versions after observing the given hashes: a
// counter moves by one when its hash differs from the recorded one, and
// only then, so that a restart never bumps it and a revert is a new version.
func NextVersions(st typesv1beta1.ClusterPropagatedVersionStatus, templateHash, overrideHash string) Versions {
	return Versions{
		Template:     bump(st.TemplateVersion, st.TemplateHash, templateHash),
		Override:     bump(st.OverrideVersion, st.OverrideHash, overrideHash),
		TemplateHash: templateHash,
		OverrideHash: overrideHash,
	}
}

func bump(v typesv1beta1.Version, oldHash, newHash string) typesv1beta1.Version {
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil || v == "" {
		return "1"
	}
	if oldHash == newHash {
		return v
	}
	return typesv1beta1.Version(strconv.FormatUint(n+1, 10))
}
