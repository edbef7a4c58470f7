package restapi

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/index"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/internal/slurmmetrics"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/slinky"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/slurm"
)

// ServiceURL is the slurmrestd endpoint of a RestApi, reached through its
// Service's cluster DNS name.
func ServiceURL(ra *slinkyv1beta1.RestApi) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", slinky.RestApiName(ra.Name), ra.Namespace, slinky.SlurmrestdPort)
}

// ClientResolver finds the slurmrestd client of a Controller when it is
// asked for one, from what the cluster says now: the RestApi that serves
// the Controller (from the manager's cache) and the Controller's JWT key
// (read through the API server, and again only when the Secret's
// resourceVersion changes). Nothing is remembered between manager runs or
// handed over from another reconciler, so a NodeSet reconciled first after
// a restart or a leader change knows Slurm as well as one reconciled later.
// Clients are kept in a slurm.Registry, so a client (its connections and
// cached token) is rebuilt only when the endpoint or the key changes.
type ClientResolver struct {
	// cache reads RestApis and Controllers.
	cache client.Reader
	// secrets reads Secret data (the manager caches no user Secret).
	secrets  client.Reader
	versions SecretVersions
	registry *slurm.Registry
	// allowOverride honours AnnotationSlurmrestdURL on RestApis.
	allowOverride bool
	metrics       *slurmmetrics.Metrics

	mu   sync.Mutex
	keys map[types.NamespacedName]cachedKey
}

type cachedKey struct {
	resourceVersion string
	name            string
	value           []byte
}

// ResolverOptions tune NewClientResolver.
type ResolverOptions struct {
	// Registry holds the clients; nil means a registry of real clients.
	Registry *slurm.Registry
	// AllowEndpointOverride honours the RestApi annotation
	// slinkyv1beta1.AnnotationSlurmrestdURL, for a manager that runs outside
	// the cluster and cannot resolve the Service's DNS name. Off by default:
	// whoever may edit a RestApi could otherwise send the manager's Slurm
	// tokens to a server of their choosing.
	AllowEndpointOverride bool
	// Metrics count each Controller's slurmrestd requests; nil counts none.
	Metrics *slurmmetrics.Metrics
	// SecretVersions tell the resourceVersion of a watched Secret, so that
	// a JWT key is read again only when it changed; nil reads it on every
	// use.
	SecretVersions SecretVersions
}

// SecretVersions is what ResolverOptions.SecretVersions needs of a
// refwatch.Watcher of Secrets.
type SecretVersions interface {
	ResourceVersion(types.NamespacedName) (rv string, found, known bool)
}

// NewClientResolver returns a resolver reading cached objects through cache
// and Secret data through secrets.
func NewClientResolver(cache, secrets client.Reader, opts ResolverOptions) *ClientResolver {
	reg := opts.Registry
	if reg == nil {
		reg = slurm.NewRegistry(nil)
	}
	return &ClientResolver{
		cache: cache, secrets: secrets, registry: reg,
		allowOverride: opts.AllowEndpointOverride,
		metrics:       opts.Metrics,
		versions:      opts.SecretVersions,
		keys:          map[types.NamespacedName]cachedKey{},
	}
}

// ClientFor returns the client of the Controller's Slurm cluster and the
// name of the RestApi it goes through. ("", nil client, nil error) means no
// RestApi serves the Controller. A RestApi name with an error means Slurm is
// configured but cannot be reached now (the Controller or its JWT key is
// missing, the endpoint is invalid): callers must assume Slurm may be
// running jobs anywhere.
func (r *ClientResolver) ClientFor(ctx context.Context, controller types.NamespacedName) (slurm.Client, string, error) {
	ra, err := r.restAPIFor(ctx, controller)
	if err != nil || ra == nil {
		return nil, "", err
	}
	c := &slinkyv1beta1.Controller{}
	if err := r.cache.Get(ctx, controller, c); err != nil {
		return nil, ra.Name, fmt.Errorf("reading Controller %s: %w", controller, err)
	}
	ref := c.Spec.EffectiveJwtKeyRef()
	if ref == nil {
		return nil, ra.Name, fmt.Errorf("Controller %s has no JWT key", controller)
	}
	key, err := r.jwtKey(ctx, c.Namespace, *ref)
	if err != nil {
		return nil, ra.Name, fmt.Errorf("reading the JWT key of Controller %s: %w", controller, err)
	}
	endpoint, err := r.Endpoint(ra)
	if err != nil {
		return nil, ra.Name, err
	}
	if _, err := r.registry.Set(controller, slurm.Config{URL: endpoint, JWTKey: key,
		Observer: r.metrics.Observer(controller.Namespace, controller.Name)}); err != nil {
		return nil, ra.Name, fmt.Errorf("configuring the Slurm client for Controller %s: %w", controller, err)
	}
	sc, _ := r.registry.Get(controller)
	return sc, ra.Name, nil
}

// Endpoint is the slurmrestd URL Gantry uses for ra: its Service, unless
// overrides are allowed and the RestApi names another.
func (r *ClientResolver) Endpoint(ra *slinkyv1beta1.RestApi) (string, error) {
	override := ra.Annotations[slinkyv1beta1.AnnotationSlurmrestdURL]
	if override == "" || !r.allowOverride {
		return ServiceURL(ra), nil
	}
	u, err := url.Parse(override)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("RestApi %s/%s: annotation %s=%q is not an http(s) URL",
			ra.Namespace, ra.Name, slinkyv1beta1.AnnotationSlurmrestdURL, override)
	}
	return strings.TrimRight(override, "/"), nil
}

// restAPIFor returns the RestApi serving the Controller, preferring one not
// being deleted, then the first by name; nil when there is none.
func (r *ClientResolver) restAPIFor(ctx context.Context, controller types.NamespacedName) (*slinkyv1beta1.RestApi, error) {
	list := &slinkyv1beta1.RestApiList{}
	if err := r.cache.List(ctx, list, client.InNamespace(controller.Namespace),
		client.MatchingFields{index.RestApiController: controller.Name}); err != nil {
		return nil, fmt.Errorf("listing the RestApis of Controller %s: %w", controller, err)
	}
	if len(list.Items) == 0 {
		r.registry.Delete(controller)
		return nil, nil
	}
	items := list.Items
	slices.SortFunc(items, func(a, b slinkyv1beta1.RestApi) int {
		if (a.DeletionTimestamp == nil) != (b.DeletionTimestamp == nil) {
			if a.DeletionTimestamp == nil {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return &items[0], nil
}

// jwtKey returns the key sel names, reading the Secret's data only when its
// resourceVersion (as the watch of the referenced Secrets last saw it)
// differs from the last read, or is unknown.
func (r *ClientResolver) jwtKey(ctx context.Context, ns string, sel corev1.SecretKeySelector) ([]byte, error) {
	name := types.NamespacedName{Namespace: ns, Name: sel.Name}
	if r.versions != nil {
		if rv, found, known := r.versions.ResourceVersion(name); known {
			if !found {
				r.forgetKey(name)
				return nil, &refresolver.NotFoundError{Kind: "Secret", Namespace: ns, Name: sel.Name}
			}
			r.mu.Lock()
			cached, ok := r.keys[name]
			r.mu.Unlock()
			if ok && cached.resourceVersion == rv && cached.name == sel.Key {
				return cached.value, nil
			}
		}
	}
	secret := &corev1.Secret{}
	if err := r.secrets.Get(ctx, name, secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetKey(name)
			return nil, &refresolver.NotFoundError{Kind: "Secret", Namespace: ns, Name: sel.Name}
		}
		return nil, err
	}
	value, ok := secret.Data[sel.Key]
	if !ok || len(value) == 0 {
		return nil, &refresolver.NotFoundError{Kind: "Secret", Namespace: ns, Name: sel.Name, Key: sel.Key}
	}
	r.mu.Lock()
	r.keys[name] = cachedKey{resourceVersion: secret.ResourceVersion, name: sel.Key, value: value}
	r.mu.Unlock()
	return value, nil
}

func (r *ClientResolver) forgetKey(name types.NamespacedName) {
	r.mu.Lock()
	delete(r.keys, name)
	r.mu.Unlock()
}
