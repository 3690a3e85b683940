package licensing

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"time"
)

// Files the client keeps in a state directory.
const (
	// ValidationFile holds the last signed validation (its license key), the machine, the latest time seen, or the
	// service's last refusal.
	ValidationFile = "licensing-validation.json"
	// JWKSFile holds the service's key set, to verify offline.
	JWKSFile = "jwks.json"
	// SessionsFile holds the session pings waiting to be sent.
	SessionsFile = "licensing-sessions.json"
)

// Grace validates online when the service answers, and keeps the license usable offline for the grace days the
// service signed (Licensing:OfflineGraceDays) when it does not (CONTRACT section 11). What it keeps in Dir is safe
// on the user's disk: only the signed license key is trusted, through its signature against the kept JWKS, the grace
// is counted from its signed iat, and a clock set back is refused. A refusal by the service (revoked, expired,
// deactivated) replaces what is kept, so the grace ends at the first validation that reaches the service.
type Grace struct {
	Client *Client
	// Dir is the state directory (the application's user-data directory).
	Dir string
	// ProductCode, when given: a kept validation of another product's license is not used.
	ProductCode string
	// ClockSkew the clock may be behind before it counts as set back (0: 300 seconds).
	ClockSkew time.Duration
}

// GraceResult is the answer of Grace.Validate: online, or offline within the grace.
type GraceResult struct {
	// Online: the service answered; Validation is its verified answer.
	Online     bool
	Validation *Validation
	// Claims: the verified license key (online: the fresh one; offline: the kept one).
	Claims *LicenseKeyClaims
	// ValidatedAt is when the kept validation was signed; GraceUntil when offline use ends.
	ValidatedAt, GraceUntil time.Time
	// Cause: offline, why the service was not reached.
	Cause error
}

type storedRefusal struct {
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
	At      string `json:"at"`
}

type storedValidation struct {
	V          int            `json:"v"`
	MachineID  string         `json:"machineId,omitempty"`
	LicenseKey string         `json:"licenseKey,omitempty"`
	LastSeen   string         `json:"lastSeen,omitempty"`
	Refused    *storedRefusal `json:"refused,omitempty"`
}

func (g *Grace) load() storedValidation {
	var s storedValidation
	if data, err := os.ReadFile(statePath(g.Dir, ValidationFile)); err == nil {
		_ = json.Unmarshal(data, &s)
	}
	s.V = 1
	return s
}

func (g *Grace) save(s storedValidation, now time.Time) error {
	if last, err := ParseTime(s.LastSeen); err != nil || now.After(last) {
		s.LastSeen = FormatTime(now)
	}
	s.V = 1
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeFileAtomic(statePath(g.Dir, ValidationFile), data)
}

func (g *Grace) skew() time.Duration {
	if g.ClockSkew > 0 {
		return g.ClockSkew
	}
	return 300 * time.Second
}

// keys: the client's trusted keys, else the key set kept in Dir.
func (g *Grace) keys() *JWKS {
	if g.Client.trusted != nil {
		return g.Client.trusted
	}
	keys, err := LoadJWKS(statePath(g.Dir, JWKSFile))
	if err != nil {
		return nil
	}
	return keys
}

// unverifiedIssuedAt reads a license key's iat without verifying it (the verification that follows does).
func unverifiedIssuedAt(key string) (time.Time, bool) {
	parts := strings.Split(key, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Iat *float64 `json:"iat"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Iat == nil {
		return time.Time{}, false
	}
	return secondsTime(*claims.Iat), true
}

// verifiedStored returns the kept validation's verified claims for this machine, or nil.
func (g *Grace) verifiedStored(s storedValidation, machineID string) *LicenseKeyClaims {
	if s.LicenseKey == "" || s.MachineID != machineID {
		return nil
	}
	iat, ok := unverifiedIssuedAt(s.LicenseKey)
	if !ok {
		return nil
	}
	// Checked as of its own issue: its signature, machine and product; the grace decides how long it lasts.
	claims, err := VerifyLicenseKey(s.LicenseKey, g.keys(), VerifyOptions{Now: iat, MachineID: machineID, ProductCode: g.ProductCode})
	if err != nil {
		return nil
	}
	return claims
}

// Validate validates the license for r.MachineID (required): online when the service answers (the verified answer's
// license key is kept with the key set), else from what is kept within the grace. Offline refusals: grace (the
// grace ended, or the license was never validated online on this machine), clock, expired, or the service's reason
// when its last answer was a refusal.
func (g *Grace) Validate(ctx context.Context, r ValidateRequest) (*GraceResult, error) {
	if r.MachineID == "" {
		return nil, refuse(CodeMalformed, "offline grace needs the machine id")
	}
	if r.ProductCode == "" {
		r.ProductCode = g.ProductCode
	}
	stored := g.load()
	validation, err := g.Client.Validate(ctx, r)
	now := g.Client.now()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return nil, err
		}
		if e.ServiceRefused() {
			// The service judged the license: whatever was kept no longer counts.
			_ = g.save(storedValidation{MachineID: r.MachineID, LastSeen: stored.LastSeen, Refused: &storedRefusal{
				Message: e.Message, Reason: e.Code, At: FormatTime(now),
			}}, now)
			return nil, err
		}
		if !e.Unreachable() {
			return nil, err
		}
		return g.offline(stored, r.MachineID, e, now)
	}
	if keys := g.Client.trusted; keys == nil {
		if keys, err := g.Client.Keys(ctx, false); err == nil {
			_ = SaveJWKS(statePath(g.Dir, JWKSFile), keys)
		}
	}
	key := ""
	if validation.License != nil {
		key = validation.License.LicenseKey
	}
	if err := g.save(storedValidation{MachineID: r.MachineID, LicenseKey: key, LastSeen: stored.LastSeen}, now); err != nil {
		return nil, refuseWith(CodeMalformed, err, "the state directory %s cannot be written: %v", g.Dir, err)
	}
	return &GraceResult{
		Online: true, Validation: validation, Claims: validation.Claims, ValidatedAt: validation.Claims.IssuedAt,
		GraceUntil: validation.Claims.GraceUntil(),
	}, nil
}

func (g *Grace) offline(stored storedValidation, machineID string, cause *Error, now time.Time) (*GraceResult, error) {
	if stored.Refused != nil && stored.MachineID == machineID {
		code := stored.Refused.Reason
		if code == "" {
			code = CodeGrace
		}
		return nil, &Error{Code: code, Err: cause, Message: "the licensing service cannot be reached, and at the last validation it refused the license (" + stored.Refused.Message + "): it cannot be used offline"}
	}
	claims := g.verifiedStored(stored, machineID)
	if claims == nil {
		return nil, &Error{Code: CodeGrace, Err: cause, Message: "the licensing service cannot be reached, and the license was never validated online on this machine: connect once to use it offline"}
	}
	lastSeen, lastErr := ParseTime(stored.LastSeen)
	if now.Add(g.skew()).Before(claims.IssuedAt) || lastErr == nil && now.Add(g.skew()).Before(lastSeen) {
		return nil, &Error{Code: CodeClock, Err: cause, Message: "the computer's clock (" + FormatTime(now) + ") is earlier than the last validation or the last time this application ran: the clock was set back"}
	}
	if claims.ExpireAt != nil && !claims.ExpireAt.After(now) {
		return nil, &Error{Code: CodeExpired, Err: cause, Message: "the license expired at " + FormatTime(*claims.ExpireAt)}
	}
	until := claims.GraceUntil()
	if !now.Before(until) {
		return nil, &Error{Code: CodeGrace, Err: cause, Message: "the licensing service cannot be reached, and the license's offline use after its last validation (" + FormatTime(claims.IssuedAt) + ") ended at " + FormatTime(until) + ": connect to validate it"}
	}
	_ = g.save(stored, now)
	return &GraceResult{Online: false, Claims: claims, ValidatedAt: claims.IssuedAt, GraceUntil: until, Cause: cause}, nil
}
