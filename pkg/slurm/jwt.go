package slurm

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Slurm's auth/jwt plugin reads the user from the "sun" claim and rejects a
// token whose "exp" has passed; "iat" is informational. HS256 is the only
// algorithm it accepts for a shared key. Tokens are made and checked with
// github.com/golang-jwt/jwt/v5, as Slinky's operator does.
const (
	// DefaultTokenLifetime lets one token serve many reconciles while
	// limiting what a leaked one is worth.
	DefaultTokenLifetime = 30 * time.Minute
)

// TokenClaims are the claims Slurm reads from a token.
type TokenClaims struct {
	// UserName is Slurm's "sun" claim: the user the token authenticates.
	UserName string
	// IssuedAt and ExpiresAt are Unix seconds.
	IssuedAt  int64
	ExpiresAt int64
}

// wireClaims is TokenClaims as the token carries them.
type wireClaims struct {
	UserName string `json:"sun"`
	jwt.RegisteredClaims
}

// SignToken returns an HS256 JWT for claims signed with key.
func SignToken(key []byte, claims TokenClaims) (string, error) {
	if len(key) == 0 {
		return "", errors.New("slurm: empty jwt key")
	}
	if claims.UserName == "" {
		return "", errors.New("slurm: jwt user name is empty")
	}
	token := jwt.NewWithClaims(jwt.SigningMethodHS256, wireClaims{UserName: claims.UserName, RegisteredClaims: jwt.RegisteredClaims{
		IssuedAt:  jwt.NewNumericDate(time.Unix(claims.IssuedAt, 0)),
		ExpiresAt: jwt.NewNumericDate(time.Unix(claims.ExpiresAt, 0)),
	}})
	signed, err := token.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("slurm: signing the jwt: %w", err)
	}
	return signed, nil
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
	var wire wireClaims
	_, err := jwt.ParseWithClaims(token, &wire, func(*jwt.Token) (any, error) { return key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }))
	claims := TokenClaims{UserName: wire.UserName}
	if wire.IssuedAt != nil {
		claims.IssuedAt = wire.IssuedAt.Unix()
	}
	if wire.ExpiresAt != nil {
		claims.ExpiresAt = wire.ExpiresAt.Unix()
	}
	switch {
	case err == nil:
		return claims, nil
	case errors.Is(err, jwt.ErrTokenExpired):
		return claims, fmt.Errorf("%w at %s", ErrTokenExpired, time.Unix(claims.ExpiresAt, 0).UTC().Format(time.RFC3339))
	default:
		return claims, fmt.Errorf("slurm: %w", err)
	}
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
