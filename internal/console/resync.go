package console

import (
	"encoding/json"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// consoleHeader is the header the console's pages send with a write.
const consoleHeader = "X-Fedwarden-Console"

// ResyncResult is the answer of a resync.
type ResyncResult struct {
	// Message says what happened: the value set, or the API server's
	// refusal.
	Message string `json:"message"`
	// Value is the value of kubefed.io/resync set.
	Value string `json:"value,omitempty"`
}

// serveResync sets kubefed.io/resync on the federated resource the query
// names, as the user, with the merge patch `fedwarden resync` sends: the
// current time, RFC 3339 in UTC. A refusal answers the API server's status
// code and message.
func (s *Server) serveResync(w http.ResponseWriter, r *http.Request, v *view) {
	if !fromConsole(w, r, "a resync") {
		return
	}
	found := s.findRow(w, r, v)
	if found == nil {
		return
	}
	kind, err := kindOf(v, found)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, ResyncResult{Message: err.Error()})
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	value := time.Now().UTC().Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{typesv1beta1.AnnotationResync: value}}})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, ResyncResult{Message: err.Error()})
		return
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(kind.gvk)
	key := kind.key(found)
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	if err := v.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		writeJSON(w, statusOf(err), ResyncResult{Message: apiMessage(err)})
		return
	}
	writeJSON(w, http.StatusOK, ResyncResult{Message: "resync requested: " + typesv1beta1.AnnotationResync + "=" + value, Value: value})
}
