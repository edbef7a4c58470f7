package statusserver

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/gantry-dev/gantry/api/trainer/v1alpha1"
	"github.com/gantry-dev/gantry/pkg/runtime/plugins/trainjobstatus"
)

// DefaultPort is Trainer's default status server port.
const DefaultPort = 10443

// FieldOwner writes status.trainerStatus, as Trainer's server does.
const FieldOwner = "trainer-status"

const (
	maxBodyBytes = 64 << 10
	// authCacheTTL: how long an authorised token is trusted without a new
	// TokenReview (tokens live an hour; a report every few seconds would
	// otherwise cost a review and a Pod read each).
	authCacheTTL = time.Minute
	podNameExtra = "authentication.kubernetes.io/pod-name"
	podUIDExtra  = "authentication.kubernetes.io/pod-uid"
)

// UpdateRequest is the body training code sends (Trainer's
// UpdateTrainJobStatusRequest).
type UpdateRequest struct {
	TrainerStatus *trainer.TrainerStatus `json:"trainerStatus,omitempty"`
}

// Server serves the endpoint on every replica (no leader election: pods
// reach whichever replica the Service picks).
type Server struct {
	// Client creates TokenReviews and writes the TrainJob status.
	Client client.Client
	// Reader reads the Pod a token is bound to (uncached).
	Reader client.Reader
	// Port and CertDir: the serving certificate is the webhook server's
	// (tls.crt, tls.key), waited for and reloaded when it rotates.
	Port    int
	CertDir string

	log   logr.Logger
	mu    sync.Mutex
	authz map[[32]byte]authorised
}

type authorised struct {
	namespace, name string
	until           time.Time
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	s.log = ctrl.Log.WithName("trainjob-status-server")
	certFile, keyFile := filepath.Join(s.CertDir, "tls.crt"), filepath.Join(s.CertDir, "tls.key")
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		_, err1 := tls.LoadX509KeyPair(certFile, keyFile)
		return err1 == nil, nil
	}); err != nil {
		return nil
	}
	watcher, err := certwatcher.New(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("status server certificate: %w", err)
	}
	go func() { _ = watcher.Start(ctx) }()

	srv := &http.Server{
		Addr:              fmt.Sprintf(":%d", s.Port),
		Handler:           s.Handler(),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: watcher.GetCertificate},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	s.log.Info("serving TrainJob status reports", "address", srv.Addr)
	if err := srv.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("TrainJob status server: %w", err)
	}
	return nil
}

// Handler is the server's HTTP handler (TLS aside), for tests.
func (s *Server) Handler() http.Handler {
	if s.log.GetSink() == nil {
		s.log = ctrl.Log.WithName("trainjob-status-server")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+trainjobstatus.Path("{namespace}", "{name}"), s.handleStatus)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusNotFound, metav1.StatusReasonNotFound, "not found")
	})
	return mux
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	ok, why, err := s.authorise(r.Context(), r.Header.Get("Authorization"), ns, name)
	switch {
	case err != nil:
		s.log.Error(err, "authorising a status report", "trainjob", ns+"/"+name)
		reply(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "internal error")
		return
	case !ok:
		s.log.V(1).Info("refused a status report", "trainjob", ns+"/"+name, "reason", why)
		reply(w, http.StatusForbidden, metav1.StatusReasonForbidden, "forbidden: "+why)
		return
	}
	var req UpdateRequest
	// Unknown fields are ignored, as by Trainer's decoder, so that a newer
	// SDK's report still lands.
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(&req); err != nil {
		reply(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "invalid payload: "+err.Error())
		return
	}
	if req.TrainerStatus != nil {
		if err := s.write(r.Context(), ns, name, req.TrainerStatus); err != nil {
			var status apierrors.APIStatus
			switch {
			case apierrors.IsNotFound(err):
				reply(w, http.StatusNotFound, metav1.StatusReasonNotFound, "TrainJob not found")
			case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
				msg := err.Error()
				if errors.As(err, &status) && status.Status().Message != "" {
					msg = status.Status().Message
				}
				reply(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg)
			default:
				s.log.Error(err, "writing a status report", "trainjob", ns+"/"+name)
				reply(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "internal error")
			}
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(req)
}

// authorise accepts a bearer token the API server authenticates for the
// TrainJob's audience, issued to a ServiceAccount of its namespace and
// bound to a live Pod of its JobSet.
func (s *Server) authorise(ctx context.Context, header, ns, name string) (bool, string, error) {
	fields := strings.Fields(header)
	if len(fields) != 2 || !strings.EqualFold(fields[0], "Bearer") {
		return false, "no bearer token", nil
	}
	token := fields[1]
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	s.mu.Lock()
	if a, ok := s.authz[key]; ok && now.Before(a.until) && a.namespace == ns && a.name == name {
		s.mu.Unlock()
		return true, "", nil
	}
	s.mu.Unlock()

	audience := trainjobstatus.TokenAudience(ns, name)
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{audience}}}
	if err := s.Client.Create(ctx, review); err != nil {
		return false, "", fmt.Errorf("TokenReview: %w", err)
	}
	st := review.Status
	switch {
	case !st.Authenticated:
		return false, "the token is not valid for this TrainJob's audience", nil
	case !contains(st.Audiences, audience):
		return false, "the token is not valid for this TrainJob's audience", nil
	case !strings.HasPrefix(st.User.Username, "system:serviceaccount:"+ns+":"):
		return false, "the token is not a ServiceAccount's of the TrainJob's namespace", nil
	}
	podName, podUID := first(st.User.Extra[podNameExtra]), first(st.User.Extra[podUIDExtra])
	if podName == "" {
		return false, "the token is not bound to a Pod", nil
	}
	pod := &corev1.Pod{}
	if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: podName}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return false, "the token's Pod is gone", nil
		}
		return false, "", err
	}
	if string(pod.UID) != podUID || pod.Labels[jobsetv1alpha2.JobSetNameKey] != name {
		return false, "the token's Pod is not one of the TrainJob's", nil
	}
	s.mu.Lock()
	if s.authz == nil {
		s.authz = map[[32]byte]authorised{}
	}
	for k, a := range s.authz {
		if now.After(a.until) {
			delete(s.authz, k)
		}
	}
	s.authz[key] = authorised{namespace: ns, name: name, until: now.Add(authCacheTTL)}
	s.mu.Unlock()
	return true, "", nil
}

// write applies status.trainerStatus with the field owner trainer-status,
// as Trainer's server does; the schema validates the values.
func (s *Server) write(ctx context.Context, ns, name string, ts *trainer.TrainerStatus) error {
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ts)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": trainer.GroupVersion.String(),
		"kind":       trainer.TrainJobKind,
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"status":     map[string]any{"trainerStatus": status},
	}}
	return s.Client.Status().Patch(ctx, obj, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership) //nolint:staticcheck // no typed apply configuration for Gantry's API
}

func reply(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func first(v authenticationv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
