package metricsendpoint

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// reviewBackoff is how a TokenReview or SubjectAccessReview that fails is
// retried, as the API server's own delegating authentication does.
var reviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// withAuthenticationAndAuthorization is controller-runtime's
// filters.WithAuthenticationAndAuthorization, with the same reviews and
// caches, but for one thing: a token the API server does not accept
// (expired, revoked, not a token) is a 401, logged at V(4), as a missing
// one is. controller-runtime answers 500 and logs an error with its stack
// trace at every such scrape, so that anybody who reaches the port could
// fill the log, and a scraper whose token expired would look like a
// failing controller.
func withAuthenticationAndAuthorization(config *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	tokens, err := authenticationv1.NewForConfigAndClient(config, hc)
	if err != nil {
		return nil, err
	}
	reviews, err := authorizationv1.NewForConfigAndClient(config, hc)
	if err != nil {
		return nil, err
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 time.Minute,
		TokenAccessReviewClient:  tokens,
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      &reviewBackoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("creating the authenticator of /metrics: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: reviews,
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       &reviewBackoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("creating the authorizer of /metrics: %w", err)
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			res, ok, err := authn.AuthenticateRequest(req)
			if err != nil || !ok {
				log.V(4).Info("Refused an unauthenticated scrape", "reason", err)
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			attributes := authorizer.AttributesRecord{User: res.User, Verb: strings.ToLower(req.Method), Path: req.URL.Path}
			decision, reason, err := authz.Authorize(req.Context(), attributes)
			switch {
			case err != nil:
				log.Error(err, "Reviewing a scrape's access", "user", res.User.GetName())
				http.Error(w, "Authorization failed", http.StatusInternalServerError)
			case decision != authorizer.DecisionAllow:
				log.V(4).Info("Refused an unauthorized scrape", "user", res.User.GetName(), "reason", reason)
				http.Error(w, "Forbidden: "+res.User.GetName()+" may not get "+req.URL.Path, http.StatusForbidden)
			default:
				next.ServeHTTP(w, req)
			}
		}), nil
	}, nil
}
