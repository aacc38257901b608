package plan

import (
	"net/http"

	"github.com/fedwarden/fedwarden/internal/planreport"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// dryRunOf is the member's answer to the dry run of a preview's write or
// removal: allowed, refused (the member's API server said no: admission,
// quota, schema, rights), failed (it could not be asked), or skipped, as
// missing says, when the copy's namespace does not exist there yet.
func dryRunOf(pv propagation.Preview, missing string) *planreport.DryRun {
	switch {
	case pv.NamespaceMissing:
		return &planreport.DryRun{Status: planreport.DryRunSkipped, Message: missing}
	case pv.Message == "":
		return &planreport.DryRun{Status: planreport.DryRunAllowed, Allowed: true}
	case refusal(pv.Code):
		return &planreport.DryRun{Status: planreport.DryRunRefused, Message: pv.Message}
	}
	return &planreport.DryRun{Status: planreport.DryRunFailed, Message: pv.Message}
}

// refusal tells whether an HTTP status code is the member saying no to the
// write, rather than failing to answer.
func refusal(code int32) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return code >= 400 && code < 500
}
