package slurm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Slurm's auth/jwt plugin reads the user from the "sun" claim and rejects a
// token whose "exp" has passed; "iat" is informational. HS256 is the only
// algorithm it accepts for a shared key, so a hand-rolled signer is both
// enough and easier to audit than a JWT library.
const (
	// DefaultTokenLifetime lets one token serve many reconciles while
	// limiting what a leaked one is worth.
	DefaultTokenLifetime = 30 * time.Minute
	// jwtHeaderJSON never changes, so it is encoded once.
	jwtHeaderJSON = `{"alg":"HS256","typ":"JWT"}`
)

var jwtHeaderEncoded = base64.RawURLEncoding.EncodeToString([]byte(jwtHeaderJSON))

// TokenClaims are the claims Slurm reads from a token.
type TokenClaims struct {
	// UserName is Slurm's "sun" claim: the user the token authenticates.
	UserName string `json:"sun"`
	// IssuedAt and ExpiresAt are Unix seconds.
	IssuedAt  int64 `json:"iat"`
	ExpiresAt int64 `json:"exp"`
}

// SignToken returns an HS256 JWT for claims signed with key.
func SignToken(key []byte, claims TokenClaims) (string, error) {
	if len(key) == 0 {
		return "", errors.New("slurm: empty jwt key")
	}
	if claims.UserName == "" {
		return "", errors.New("slurm: jwt user name is empty")
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("slurm: encoding jwt claims: %w", err)
	}
	signingInput := jwtHeaderEncoded + "." + base64.RawURLEncoding.EncodeToString(payload)
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(hs256(key, signingInput)), nil
}

// ErrTokenExpired is VerifyToken's error for a token whose "exp" is not
// after the time it was asked about.
var ErrTokenExpired = errors.New("slurm: jwt expired")

// VerifyToken checks token as slurmctld's auth/jwt does at time now: its
// HS256 signature against key, and an "exp" after now (ErrTokenExpired
// otherwise). It returns the claims, also with ErrTokenExpired. It exists
// so tests, fakes and debugging tools can prove a token is what slurmctld
// will accept.
func VerifyToken(key []byte, token string, now time.Time) (TokenClaims, error) {
	var claims TokenClaims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return claims, errors.New("slurm: jwt must have three parts")
	}
	header, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return claims, fmt.Errorf("slurm: jwt header: %w", err)
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(header, &h); err != nil {
		return claims, fmt.Errorf("slurm: jwt header: %w", err)
	}
	if h.Alg != "HS256" {
		return claims, fmt.Errorf("slurm: jwt alg %q, want HS256", h.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return claims, fmt.Errorf("slurm: jwt signature: %w", err)
	}
	if !hmac.Equal(sig, hs256(key, parts[0]+"."+parts[1])) {
		return claims, errors.New("slurm: jwt signature mismatch")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return claims, fmt.Errorf("slurm: jwt payload: %w", err)
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return claims, fmt.Errorf("slurm: jwt payload: %w", err)
	}
	if claims.ExpiresAt <= now.Unix() {
		return claims, fmt.Errorf("%w at %s", ErrTokenExpired, time.Unix(claims.ExpiresAt, 0).UTC().Format(time.RFC3339))
	}
	return claims, nil
}

func hs256(key []byte, signingInput string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signingInput))
	return mac.Sum(nil)
}

// TokenSource hands out a cached token and signs a new one once the cached
// token is within RefreshBefore of expiring, so a request never carries a
// token that expires mid-flight and slurmctld is not asked to verify a fresh
// signature on every call.
type TokenSource struct {
	key      []byte
	userName string
	lifetime time.Duration
	// refreshBefore is how long before expiry a token is replaced.
	refreshBefore time.Duration
	now           func() time.Time

	mu        sync.Mutex
	token     string
	expiresAt time.Time
}

// TokenSourceOption customises a TokenSource.
type TokenSourceOption func(*TokenSource)

// WithTokenLifetime sets how long each signed token is valid.
func WithTokenLifetime(d time.Duration) TokenSourceOption {
	return func(ts *TokenSource) { ts.lifetime = d }
}

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) TokenSourceOption {
	return func(ts *TokenSource) { ts.now = now }
}

// NewTokenSource returns a TokenSource for userName signing with key. The
// key is copied so a caller reusing its buffer cannot change it.
func NewTokenSource(key []byte, userName string, opts ...TokenSourceOption) (*TokenSource, error) {
	if len(key) == 0 {
		return nil, errors.New("slurm: empty jwt key")
	}
	if userName == "" {
		return nil, errors.New("slurm: jwt user name is empty")
	}
	ts := &TokenSource{
		key:      append([]byte(nil), key...),
		userName: userName,
		lifetime: DefaultTokenLifetime,
		now:      time.Now,
	}
	for _, o := range opts {
		o(ts)
	}
	if ts.lifetime < 2*time.Second {
		return nil, fmt.Errorf("slurm: jwt lifetime %s is too short", ts.lifetime)
	}
	// A third of the lifetime leaves room for clock skew between Gantry and
	// slurmctld and for slow requests, while still reusing each token for
	// most of its life.
	ts.refreshBefore = ts.lifetime / 3
	return ts, nil
}

// UserName is the Slurm user the tokens authenticate.
func (ts *TokenSource) UserName() string { return ts.userName }

// Token returns a valid token, signing a new one when needed.
func (ts *TokenSource) Token() (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := ts.now()
	if ts.token != "" && now.Add(ts.refreshBefore).Before(ts.expiresAt) {
		return ts.token, nil
	}
	exp := now.Add(ts.lifetime)
	token, err := SignToken(ts.key, TokenClaims{
		UserName:  ts.userName,
		IssuedAt:  now.Unix(),
		ExpiresAt: exp.Unix(),
	})
	if err != nil {
		return "", err
	}
	ts.token, ts.expiresAt = token, time.Unix(exp.Unix(), 0)
	return token, nil
}
