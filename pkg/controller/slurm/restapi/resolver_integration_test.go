package restapi_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	slurmworkload "github.com/gantry-dev/gantry/pkg/controller/slurm"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/restapi"
	"github.com/gantry-dev/gantry/pkg/framework/refresolver"
	"github.com/gantry-dev/gantry/pkg/framework/refwatch"
	"github.com/gantry-dev/gantry/pkg/slurm"
	"github.com/gantry-dev/gantry/pkg/slurm/fake"
	"github.com/gantry-dev/gantry/test/testenv"
	"github.com/gantry-dev/gantry/test/testenv/managertest"
	slinkytesting "github.com/gantry-dev/gantry/test/wrappers/slinky"
)

// builtConfigs records the configs a registry built clients from.
type builtConfigs struct {
	mu   sync.Mutex
	cfgs []slurm.Config
}

func (b *builtConfigs) factory(cfg slurm.Config) (slurm.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cfgs = append(b.cfgs, cfg)
	return fake.New(), nil
}

func (b *builtConfigs) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.cfgs)
}

func (b *builtConfigs) last() slurm.Config {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfgs[len(b.cfgs)-1]
}

// secretReads counts the Secrets read through it (the resolver's reads of
// key data from the API server).
type secretReads struct {
	client.Reader
	mu sync.Mutex
	n  int
}

func (r *secretReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *secretReads) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// TestClientResolver resolves a Controller's Slurm client from the cluster
// as it is when asked: no reconciler has to have published anything first,
// which is what makes a NodeSet reconciled right after a manager restart or
// a leader change see Slurm.
func TestClientResolver(t *testing.T) {
	g := NewWithT(t)
	env := testenv.Start(t, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{slinkyv1beta1.AddToScheme}})
	// The field indexes and the RestApi reconciler's Secret metadata watch
	// are what the resolver reads through; the reconciler is set up but
	// never needed.
	var versions *refwatch.Watcher
	mgr := managertest.Start(t, env, func(mgr ctrl.Manager) error {
		if err := slurmworkload.Integration().SetupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return err
		}
		var err error
		if versions, err = refwatch.For(mgr, &corev1.Secret{}); err != nil {
			return err
		}
		r, err := restapi.New(mgr, restapi.Options{})
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	})
	built := &builtConfigs{}
	reg := slurm.NewRegistry(built.factory)
	reads := &secretReads{Reader: mgr.GetAPIReader()}
	resolver := restapi.NewClientResolver(mgr.GetClient(), reads, restapi.ResolverOptions{Registry: reg, SecretVersions: versions})
	overriding := restapi.NewClientResolver(mgr.GetClient(), mgr.GetAPIReader(),
		restapi.ResolverOptions{Registry: slurm.NewRegistry(built.factory), AllowEndpointOverride: true})

	ctx := context.Background()
	c := env.Client
	const ns = "resolver-it"
	controller := types.NamespacedName{Namespace: ns, Name: "slurm"}
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeSecret("keys", ns, map[string]string{"slurm.key": "k1", "jwt.key": "j1"}).Obj())).To(Succeed())
	g.Expect(c.Create(ctx, slinkytesting.MakeController("slurm", ns).Keys("keys").Obj())).To(Succeed())

	t.Run("no RestApi means no client and no error", func(t *testing.T) {
		g := NewWithT(t)
		sc, rest, err := resolver.ClientFor(ctx, controller)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rest).To(BeEmpty())
		g.Expect(sc).To(BeNil())
	})

	ra := slinkytesting.MakeRestApi("rest", ns, "slurm").Obj()
	ra.Annotations = map[string]string{slinkyv1beta1.AnnotationSlurmrestdURL: "http://127.0.0.1:6999/"}
	g.Expect(c.Create(ctx, ra)).To(Succeed())

	t.Run("a RestApi gives a client for its Service, signed with the Controller's JWT key", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			sc, rest, err := resolver.ClientFor(ctx, controller)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rest).To(Equal("rest"))
			g.Expect(sc).NotTo(BeNil())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		cfg := built.last()
		g.Expect(cfg.URL).To(Equal("http://rest-restapi."+ns+".svc:6820"), "the annotation is ignored unless overrides are allowed")
		g.Expect(cfg.JWTKey).To(Equal([]byte("j1")))
	})

	t.Run("an unchanged RestApi and key reuse the client", func(t *testing.T) {
		g := NewWithT(t)
		before := built.count()
		first, _, err := resolver.ClientFor(ctx, controller)
		g.Expect(err).NotTo(HaveOccurred())
		second, _, err := resolver.ClientFor(ctx, controller)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(second).To(BeIdenticalTo(first))
		g.Expect(built.count()).To(Equal(before))
	})

	t.Run("an unchanged key is not read again once its Secret is watched", func(t *testing.T) {
		g := NewWithT(t)
		key := types.NamespacedName{Namespace: ns, Name: "keys"}
		g.Eventually(func() bool { _, found, known := versions.ResourceVersion(key); return found && known }).
			WithTimeout(30*time.Second).Should(BeTrue(), "the Controller's key Secret is watched by name")
		_, _, err := resolver.ClientFor(ctx, controller)
		g.Expect(err).NotTo(HaveOccurred())
		before := reads.count()
		for range 3 {
			_, _, err := resolver.ClientFor(ctx, controller)
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Expect(reads.count()).To(Equal(before))
	})

	t.Run("with overrides allowed the annotation is the endpoint", func(t *testing.T) {
		g := NewWithT(t)
		_, rest, err := overriding.ClientFor(ctx, controller)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rest).To(Equal("rest"))
		g.Expect(built.last().URL).To(Equal("http://127.0.0.1:6999"))
	})

	t.Run("a rotated JWT key gives a new client", func(t *testing.T) {
		g := NewWithT(t)
		secret := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keys"}, secret)).To(Succeed())
		secret.Data["jwt.key"] = []byte("j2")
		g.Expect(c.Update(ctx, secret)).To(Succeed())
		g.Eventually(func(g Gomega) {
			_, _, err := resolver.ClientFor(ctx, controller)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(built.last().JWTKey).To(Equal([]byte("j2")))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	t.Run("an unreadable JWT key is an error naming the RestApi, never 'no RestApi'", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keys"}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			sc, rest, err := resolver.ClientFor(ctx, controller)
			g.Expect(err).To(HaveOccurred())
			g.Expect(refresolver.IsNotFound(err)).To(BeTrue(), "%v", err)
			g.Expect(rest).To(Equal("rest"))
			g.Expect(sc).To(BeNil())
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	t.Run("a bad override is an error naming the annotation", func(t *testing.T) {
		g := NewWithT(t)
		bad := ra.DeepCopy()
		bad.Annotations[slinkyv1beta1.AnnotationSlurmrestdURL] = "slurmrestd:6820"
		_, err := overriding.Endpoint(bad)
		g.Expect(err).To(MatchError(ContainSubstring(slinkyv1beta1.AnnotationSlurmrestdURL)))
	})
}
