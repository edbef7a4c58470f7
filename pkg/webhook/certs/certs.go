package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gantry-dev/gantry/pkg/framework/builder"
)

// Modes of certificate management.
const (
	// ModeSelf: Gantry makes and rotates the CA and serving certificate.
	ModeSelf = "self"
	// ModeExternal: the files in CertDir are provided (e.g. by cert-manager).
	ModeExternal = "external"
)

// File names in CertDir, the ones controller-runtime's webhook server reads
// and cert-manager and cert-controller write.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	// CAFile is the CA bundle; cert-controller and cert-manager write it
	// too. The TrainJob progress endpoint hands it to trainer pods.
	CAFile = "ca.crt"
)

// Options configure the serving certificate.
type Options struct {
	Mode    string
	CertDir string
	// SecretName/SecretNamespace hold the CA and serving certificate (Mode self).
	SecretName      string
	SecretNamespace string
	// ServiceName is the webhook Service; its in-cluster DNS names go into
	// the certificate.
	ServiceName string
	// ExtraDNSNames are further names, e.g. "localhost" when the API server
	// reaches an out-of-cluster manager by URL.
	ExtraDNSNames []string
	// Webhook configurations whose caBundle Gantry keeps current (Mode
	// self); an empty name is skipped.
	ValidatingConfiguration string
	MutatingConfiguration   string
	// WriteFiles copies the Secret's certificate into CertDir (the chart
	// mounts an in-memory emptyDir there; outside a cluster it is any
	// directory). Without it the Secret must be mounted at CertDir, and a
	// new certificate appears only after the kubelet refreshes the volume.
	WriteFiles bool
}

// Validate checks the options before anything starts.
func (o Options) Validate() error {
	switch o.Mode {
	case ModeSelf:
		if o.SecretName == "" || o.SecretNamespace == "" {
			return errors.New("--cert-management=self needs --webhook-secret-name and a namespace (--webhook-secret-namespace, or the manager's own namespace)")
		}
		if o.ServiceName == "" && len(o.ExtraDNSNames) == 0 {
			return errors.New("--cert-management=self needs --webhook-service-name or --webhook-dns-names for the certificate")
		}
	case ModeExternal:
		if o.WriteFiles {
			return errors.New("--webhook-cert-write only applies to --cert-management=self")
		}
	default:
		return fmt.Errorf("--cert-management must be %q or %q, not %q", ModeSelf, ModeExternal, o.Mode)
	}
	if o.CertDir == "" {
		return errors.New("--webhook-cert-dir must not be empty")
	}
	return nil
}

// DNSNames are the names the serving certificate is valid for.
func (o Options) DNSNames() []string {
	var names []string
	if o.ServiceName != "" {
		svc := o.ServiceName + "." + o.SecretNamespace
		names = append(names, svc+".svc", svc+".svc.cluster.local", svc)
	}
	return append(names, o.ExtraDNSNames...)
}

// Manager sets up certificates and reports when they are in place.
type Manager struct {
	opts  Options
	ready chan struct{}
	done  atomic.Bool
}

// Setup prepares certificate management on mgr. c is a live (uncached)
// client used before the manager starts. onReady runs once the serving
// certificate is in CertDir (and, in self mode, the CA is injected); the
// manager registers its webhooks there, so the webhook server never starts
// without a certificate.
func Setup(ctx context.Context, mgr ctrl.Manager, c client.Client, o Options, onReady func() error) (*Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{opts: o, ready: make(chan struct{})}
	certsReady := make(chan struct{})
	switch o.Mode {
	case ModeSelf:
		if err := ensureSecret(ctx, c, types.NamespacedName{Namespace: o.SecretNamespace, Name: o.SecretName}); err != nil {
			return nil, err
		}
		names := o.DNSNames()
		var hooks []rotator.WebhookInfo
		if o.ValidatingConfiguration != "" {
			hooks = append(hooks, rotator.WebhookInfo{Name: o.ValidatingConfiguration, Type: rotator.Validating})
		}
		if o.MutatingConfiguration != "" {
			hooks = append(hooks, rotator.WebhookInfo{Name: o.MutatingConfiguration, Type: rotator.Mutating})
		}
		if err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey:      types.NamespacedName{Namespace: o.SecretNamespace, Name: o.SecretName},
			CertDir:        o.CertDir,
			CAName:         "gantry-webhook-ca",
			CAOrganization: "gantry",
			DNSName:        names[0],
			ExtraDNSNames:  names[1:],
			IsReady:        certsReady,
			Webhooks:       hooks,
			// Every replica serves webhooks, so every replica needs the
			// files; only the Secret's writer races, and cert-controller
			// resolves that with resourceVersion conflicts.
			RequireLeaderElection: false,
			FieldOwner:            "gantry",
		}); err != nil {
			return nil, fmt.Errorf("setting up webhook certificate rotation: %w", err)
		}
		if o.WriteFiles {
			if err := mgr.Add(&secretFileWriter{reader: mgr.GetAPIReader(), key: types.NamespacedName{Namespace: o.SecretNamespace, Name: o.SecretName}, dir: o.CertDir}); err != nil {
				return nil, err
			}
		}
	case ModeExternal:
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
				return filesPresent(o.CertDir), nil
			})
			if err == nil {
				close(certsReady)
			}
			return nil
		})); err != nil {
			return nil, err
		}
	}
	if err := mgr.Add(&readyWaiter{certsReady: certsReady, onReady: func() error {
		if err := onReady(); err != nil {
			return err
		}
		m.done.Store(true)
		close(m.ready)
		return nil
	}}); err != nil {
		return nil, err
	}
	return m, nil
}

// Check is a readyz checker: not ready until the certificates are in place
// and the webhooks registered.
func (m *Manager) Check(_ *http.Request) error {
	if !m.done.Load() {
		return fmt.Errorf("webhook serving certificates are not in place yet (%s mode, %s)", m.opts.Mode, m.opts.CertDir)
	}
	return nil
}

// Ready is closed once the webhooks are registered.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// readyWaiter runs onReady once the certificates are there. It runs on
// every replica: each one serves webhooks.
type readyWaiter struct {
	certsReady <-chan struct{}
	onReady    func() error
}

func (w *readyWaiter) NeedLeaderElection() bool { return false }

func (w *readyWaiter) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-w.certsReady:
	}
	ctrl.LoggerFrom(ctx).WithName("webhook").Info("serving certificates are in place; starting the webhook server")
	return w.onReady()
}

// ensureSecret creates the (empty) certificate Secret when it does not
// exist, so installs without the chart work too; cert-controller fills it.
func ensureSecret(ctx context.Context, c client.Client, key types.NamespacedName) error {
	s := &corev1.Secret{}
	err := c.Get(ctx, key, s)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading the webhook certificate Secret %s: %w", key, err)
	}
	s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: key.Namespace, Name: key.Name,
		Labels: map[string]string{builder.LabelManagedBy: builder.ManagedByGantry, builder.LabelComponent: "webhook-cert"},
	}}
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the webhook certificate Secret %s: %w", key, err)
	}
	return nil
}

func filesPresent(dir string) bool {
	for _, f := range []string{CertFile, KeyFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			return false
		}
	}
	return true
}

// secretFileWriter mirrors the certificate Secret into the cert directory,
// standing in for the kubelet's Secret volume when the manager runs
// outside a cluster.
type secretFileWriter struct {
	reader client.Reader
	key    types.NamespacedName
	dir    string
}

func (w *secretFileWriter) NeedLeaderElection() bool { return false }

func (w *secretFileWriter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("webhook")
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return fmt.Errorf("creating the webhook certificate directory: %w", err)
	}
	// Quick polls until the first certificate is written, then slow ones
	// that pick up rotations.
	interval := 500 * time.Millisecond
	for {
		if wrote, err := w.sync(ctx); err != nil {
			log.V(1).Info("copying the webhook certificate from its Secret failed; retrying", "error", err.Error())
		} else if wrote {
			log.Info("wrote the webhook serving certificate", "dir", w.dir)
		}
		if filesPresent(w.dir) {
			interval = 30 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func (w *secretFileWriter) sync(ctx context.Context) (bool, error) {
	s := &corev1.Secret{}
	if err := w.reader.Get(ctx, w.key, s); err != nil {
		return false, err
	}
	wrote := false
	for _, f := range []string{KeyFile, CertFile, CAFile} {
		data := s.Data[f]
		switch {
		case len(data) == 0 && f == CAFile:
			continue
		case len(data) == 0:
			return false, nil
		}
		path := filepath.Join(w.dir, f)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return false, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return false, err
		}
		wrote = true
	}
	return wrote, nil
}
