package slurm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// decodeSegment is written independently of jwt.go so the test does not
// verify the signer with itself.
func decodeSegment(t *testing.T, s string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("segment %q is not base64url without padding: %v", s, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("segment %q: %v", raw, err)
	}
	return m
}

func TestSignTokenIsHS256JWTWithSlurmClaims(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	token, err := SignToken(key, TokenClaims{UserName: "slurm", IssuedAt: 1700000000, ExpiresAt: 1700001800})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts, want 3", token, len(parts))
	}
	header := decodeSegment(t, parts[0])
	if header["alg"] != "HS256" || header["typ"] != "JWT" {
		t.Errorf("header = %v, want alg HS256 typ JWT", header)
	}
	claims := decodeSegment(t, parts[1])
	want := map[string]any{"sun": "slurm", "iat": float64(1700000000), "exp": float64(1700001800)}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("claim %s = %v, want %v", k, claims[k], v)
		}
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if got, want := parts[2], base64.RawURLEncoding.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("signature = %s, want HMAC-SHA256 %s", got, want)
	}
}

func TestSignTokenRejectsMissingInputs(t *testing.T) {
	tests := []struct {
		name  string
		key   []byte
		claim TokenClaims
	}{
		{"no key", nil, TokenClaims{UserName: "slurm"}},
		{"no user", []byte("k"), TokenClaims{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := SignToken(tc.key, tc.claim); err == nil {
				t.Error("SignToken succeeded, want error")
			}
		})
	}
}

func TestVerifyToken(t *testing.T) {
	key := []byte("right key")
	good, err := SignToken(key, TokenClaims{UserName: "slurm", IssuedAt: 10, ExpiresAt: 20})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	otherPayload := base64.RawURLEncoding.EncodeToString([]byte(`{"sun":"root","iat":10,"exp":20}`))
	noneHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))

	tests := []struct {
		name    string
		key     []byte
		token   string
		wantErr string
	}{
		{"valid", key, good, ""},
		{"wrong key", []byte("wrong key"), good, "signature is invalid"},
		{"payload swapped", key, parts[0] + "." + otherPayload + "." + parts[2], "signature is invalid"},
		{"alg none", key, noneHeader + "." + parts[1] + ".", "signing method none is invalid"},
		{"two parts", key, parts[0] + "." + parts[1], "invalid number of segments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claims, err := VerifyToken(tc.key, tc.token, time.Unix(19, 0))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("VerifyToken: %v", err)
				}
				if claims != (TokenClaims{UserName: "slurm", IssuedAt: 10, ExpiresAt: 20}) {
					t.Errorf("claims = %+v", claims)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

// TestVerifyTokenExpiry: a token is valid strictly before its "exp", as
// slurmctld judges it; at or after, ErrTokenExpired, claims still given.
func TestVerifyTokenExpiry(t *testing.T) {
	key := []byte("k")
	token, err := SignToken(key, TokenClaims{UserName: "slurm", IssuedAt: 10, ExpiresAt: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at      int64
		expired bool
	}{{10, false}, {19, false}, {20, true}, {3600, true}} {
		claims, err := VerifyToken(key, token, time.Unix(tc.at, 0))
		if got := errors.Is(err, ErrTokenExpired); got != tc.expired || (!tc.expired && err != nil) {
			t.Errorf("at %d: err = %v, want expired %v", tc.at, err, tc.expired)
		}
		if claims.UserName != "slurm" {
			t.Errorf("at %d: claims = %+v", tc.at, claims)
		}
	}
}

// fakeClock is a settable clock for TokenSource.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func TestTokenSourceCachesAndRefreshesBeforeExpiry(t *testing.T) {
	key := []byte("k")
	start := time.Unix(1_700_000_000, 0)
	clock := &fakeClock{now: start}
	ts, err := NewTokenSource(key, "slurm", WithTokenLifetime(30*time.Minute), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	first, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}

	// Tokens are replaced once less than a third of the lifetime (10m) is left.
	tests := []struct {
		name      string
		at        time.Duration
		wantFresh bool
	}{
		{"same instant", 0, false},
		{"half way", 15 * time.Minute, false},
		{"just before the refresh window", 20*time.Minute - time.Second, false},
		{"inside the refresh window", 20 * time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock.now = start.Add(tc.at)
			got, err := ts.Token()
			if err != nil {
				t.Fatal(err)
			}
			if fresh := got != first; fresh != tc.wantFresh {
				t.Fatalf("new token = %v, want %v", fresh, tc.wantFresh)
			}
			claims, err := VerifyToken(key, got, clock.now)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantFresh {
				if claims.IssuedAt != clock.now.Unix() || claims.ExpiresAt != clock.now.Add(30*time.Minute).Unix() {
					t.Errorf("refreshed claims = %+v, want iat=%d exp=iat+1800", claims, clock.now.Unix())
				}
			}
		})
	}
}

func TestNewTokenSourceValidates(t *testing.T) {
	tests := []struct {
		name string
		key  []byte
		user string
		opts []TokenSourceOption
	}{
		{"empty key", nil, "slurm", nil},
		{"empty user", []byte("k"), "", nil},
		{"lifetime too short", []byte("k"), "slurm", []TokenSourceOption{WithTokenLifetime(time.Second)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewTokenSource(tc.key, tc.user, tc.opts...); err == nil {
				t.Error("NewTokenSource succeeded, want error")
			}
		})
	}
}

func TestTokenSourceCopiesKey(t *testing.T) {
	key := []byte("original")
	ts, err := NewTokenSource(key, "slurm")
	if err != nil {
		t.Fatal(err)
	}
	copy(key, "mutated!")
	token, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyToken([]byte("original"), token, time.Now()); err != nil {
		t.Errorf("token not signed with the key given at construction: %v", err)
	}
}
