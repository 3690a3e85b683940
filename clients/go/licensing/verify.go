package licensing

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
)

// JWK is a public key as `GET /v1/extensions/keys` publishes it (CONTRACT section 5).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// JWKS is a JWK Set: `{"keys": [...]}`. Store it with the application to verify offline.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// ParseJWKS reads a JWK Set; keys of other types are kept (they are simply never matched).
func ParseJWKS(data []byte) (*JWKS, error) {
	var raw struct {
		Keys *[]JWK `json:"keys"`
	}
	if err := json.Unmarshal(data, &raw); err != nil || raw.Keys == nil {
		if err == nil {
			err = fmt.Errorf("no keys array")
		}
		return nil, refuseWith(CodeMalformed, err, "the key set is not a JWK Set: %v", err)
	}
	return &JWKS{Keys: *raw.Keys}, nil
}

// P256 is the key as an *ecdsa.PublicKey, or an error when it is not a valid P-256 point.
func (k JWK) P256() (*ecdsa.PublicKey, error) {
	if k.Kty != "EC" || k.Crv != "P-256" {
		return nil, fmt.Errorf("the key %q is not an EC P-256 key", k.Kid)
	}
	x, errX := base64.RawURLEncoding.DecodeString(k.X)
	y, errY := base64.RawURLEncoding.DecodeString(k.Y)
	if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
		return nil, fmt.Errorf("the key %q has no valid coordinates", k.Kid)
	}
	point := append(append([]byte{4}, x...), y...)
	return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
}

func (k JWK) isP256() bool { return k.Kty == "EC" && k.Crv == "P-256" && k.X != "" && k.Y != "" }

// Key returns the P-256 key with this kid, if the set has one.
func (s *JWKS) Key(kid string) (JWK, bool) {
	if s == nil {
		return JWK{}, false
	}
	for _, k := range s.Keys {
		if k.Kid == kid && k.isP256() {
			return k, true
		}
	}
	return JWK{}, false
}

// verifyP1363 checks an ES256 signature (r||s, 64 bytes) over message.
func verifyP1363(key *ecdsa.PublicKey, message, signature []byte) bool {
	if len(signature) != 64 {
		return false
	}
	digest := sha256.Sum256(message)
	r := new(big.Int).SetBytes(signature[:32])
	s := new(big.Int).SetBytes(signature[32:])
	return ecdsa.Verify(key, digest[:], r, s)
}

// Canonicalize returns the RFC 8785 (JCS) canonical form of a JSON text: what the service signs for an update check.
func Canonicalize(jsonText []byte) ([]byte, error) { return jcs.Transform(jsonText) }

// VerifyDataSignature checks an ES256 signature over the RFC 8785 canonical JSON of data (the raw JSON text as
// received): signature is standard base64 of the 64-byte IEEE P1363 (r||s) form, keyID the kid of a key in jwks.
// Refusals: unknownKey, signature.
func VerifyDataSignature(data json.RawMessage, signature, keyID string, jwks *JWKS) error {
	jwk, ok := jwks.Key(keyID)
	if !ok {
		return refuse(CodeUnknownKey, "no published P-256 key has the id %s", keyID)
	}
	sig, ok := decodeBase64(signature)
	if !ok || len(sig) != 64 {
		return refuse(CodeSignature, "the signature is not 64 bytes of base64")
	}
	canonical, err := Canonicalize(data)
	if err != nil {
		return refuseWith(CodeSignature, err, "the signed data cannot be canonicalized: %v", err)
	}
	key, err := jwk.P256()
	if err != nil {
		return refuseWith(CodeSignature, err, "the key %s cannot verify: %v", keyID, err)
	}
	if !verifyP1363(key, canonical, sig) {
		return refuse(CodeSignature, "the signature does not match the data")
	}
	return nil
}

// jwsHeader is the protected header of a compact JWS the service signs.
type jwsHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Typ  string   `json:"typ"`
	Crit []string `json:"crit"`
}

// verifyCompact verifies a compact JWS (ES256) with the key its kid names and returns its header and payload bytes.
// Refusals: malformed (not a JWS, another algorithm), unknownKey, signature.
func verifyCompact(token string, jwks *JWKS, what string) (jwsHeader, []byte, error) {
	var header jwsHeader
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return header, nil, refuse(CodeMalformed, "the %s is not a compact JWS", what)
	}
	headerBytes, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	payload, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	signature, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return header, nil, refuse(CodeMalformed, "the %s is not a compact JWS (base64url)", what)
	}
	if err := json.Unmarshal(headerBytes, &header); err != nil {
		return header, nil, refuseWith(CodeMalformed, err, "the %s's header is not JSON", what)
	}
	if header.Alg != "ES256" {
		return header, nil, refuse(CodeMalformed, "the %s is signed with %q, not ES256", what, header.Alg)
	}
	if len(header.Crit) > 0 {
		return header, nil, refuse(CodeMalformed, "the %s names critical extensions this client does not know", what)
	}
	var candidates []JWK
	if jwks != nil {
		for _, k := range jwks.Keys {
			if k.isP256() && (header.Kid == "" || k.Kid == header.Kid) {
				candidates = append(candidates, k)
			}
		}
	}
	if len(candidates) == 0 {
		return header, nil, refuse(CodeUnknownKey, "the %s is signed by a key this application does not know (kid %q is not in its JWKS)", what, header.Kid)
	}
	input := []byte(parts[0] + "." + parts[1])
	for _, k := range candidates {
		key, err := k.P256()
		if err == nil && verifyP1363(key, input, signature) {
			return header, payload, nil
		}
	}
	return header, nil, refuse(CodeSignature, "the %s's signature does not verify: it was altered", what)
}

// LicenseKeyClaims is the payload of a license key (CONTRACT section 4), after its signature verified.
type LicenseKeyClaims struct {
	LicenseID       string
	ProductCode     string
	LicensingMode   string // File, Activation, Floating ("" when the key names none)
	LicenseType     string // Standard, Demo, Trial
	Edition         string
	Features        []string
	Status          string
	ExpireAt        *time.Time // the license's expiry; nil = perpetual
	SupportExpireAt *time.Time
	MachineID       string
	ClientID        string
	Nonce           string
	IssuedAt        time.Time  // iat
	Expiry          *time.Time // exp of the key itself
	// OfflineGraceDays: days the license stays usable offline after IssuedAt (0 when the service signed none).
	OfflineGraceDays float64

	notBefore *time.Time
}

// VerifyOptions narrows what a license key (VerifyLicenseKey) must state.
type VerifyOptions struct {
	// Now is the time to check expiry against (zero: the computer's clock).
	Now time.Time
	// ClockTolerance on exp (default 0).
	ClockTolerance time.Duration
	// ProductCode, when given: a key of another product's license (or naming none) is refused (product).
	ProductCode string
	// MachineID, when given: a key issued to another machine is refused (machine), and so is an Activation or
	// Floating key naming no machine.
	MachineID string
	// Nonce, when given: the key must echo it (nonce).
	Nonce string
}

func secondsTime(f float64) time.Time {
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC()
}

func claimsFromPayload(payload []byte) (*LicenseKeyClaims, error) {
	v, err := decodeJSON(payload)
	if err != nil {
		return nil, fmt.Errorf("the payload is not JSON: %v", err)
	}
	o, err := asObj(v, "payload")
	if err != nil {
		return nil, err
	}
	c := &LicenseKeyClaims{}
	if c.LicenseID, err = o.str("licenseId"); err != nil {
		return nil, err
	}
	if c.ProductCode, err = o.optStr("productCode"); err != nil {
		return nil, err
	}
	if c.LicenseType, err = o.enum("licenseType", LicenseTypes); err != nil {
		return nil, err
	}
	if o.has("licensingMode") {
		if c.LicensingMode, err = o.enum("licensingMode", LicensingModes); err != nil {
			return nil, err
		}
	}
	if o.has("status") {
		if _, isString := o.m["status"].(string); !isString {
			return nil, fmt.Errorf("payload.status is not a status name")
		}
		if c.Status, err = o.enum("status", LicenseStatuses); err != nil {
			return nil, err
		}
	}
	if c.Edition, err = o.optStr("edition"); err != nil {
		return nil, err
	}
	if c.Features, err = o.strings("features"); err != nil {
		return nil, err
	}
	for key, target := range map[string]*string{"machineId": &c.MachineID, "clientId": &c.ClientID, "nonce": &c.Nonce} {
		if *target, err = o.optStr(key); err != nil {
			return nil, err
		}
	}
	for key, target := range map[string]**time.Time{"expireAt": &c.ExpireAt, "supportExpireAt": &c.SupportExpireAt} {
		s, err := o.optStr(key)
		if err != nil {
			return nil, err
		}
		if s != "" {
			t, err := ParseTime(s)
			if err != nil {
				return nil, fmt.Errorf("payload.%s is not a date: %s", key, s)
			}
			*target = &t
		}
	}
	iat, ok, err := o.optNum("iat")
	if err != nil || !ok {
		return nil, fmt.Errorf("payload.iat is missing")
	}
	c.IssuedAt = secondsTime(iat)
	if exp, ok, err := o.optNum("exp"); err != nil {
		return nil, err
	} else if ok {
		t := secondsTime(exp)
		c.Expiry = &t
	}
	if grace, ok, err := o.optNum("offlineGraceDays"); err != nil {
		return nil, err
	} else if ok {
		c.OfflineGraceDays = grace
	}
	if nbf, ok, err := o.optNum("nbf"); err != nil {
		return nil, err
	} else if ok {
		// Kept only to be checked by VerifyLicenseKey.
		t := secondsTime(nbf)
		c.notBefore = &t
	}
	return c, nil
}

// VerifyLicenseKey verifies a license key (the compact JWS of license.licenseKey) against a JWK Set offline: the
// ES256 signature by the key its kid names (unknownKey, signature), its exp and the license's own expireAt
// (expired), then the product, machine and nonce when the options name them. A key that is not a JWS or whose
// payload is not a license is malformed.
func VerifyLicenseKey(licenseKey string, jwks *JWKS, opts VerifyOptions) (*LicenseKeyClaims, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	_, payload, err := verifyCompact(licenseKey, jwks, "license key")
	if err != nil {
		return nil, err
	}
	claims, err := claimsFromPayload(payload)
	if err != nil {
		return nil, refuseWith(CodeMalformed, err, "the license key's payload is not a license: %v", err)
	}
	if claims.Expiry != nil && !claims.Expiry.After(now.Add(-opts.ClockTolerance)) {
		return nil, refuse(CodeExpired, "the license key has expired (%s)", FormatTime(*claims.Expiry))
	}
	if claims.notBefore != nil && claims.notBefore.After(now.Add(opts.ClockTolerance)) {
		return nil, refuse(CodeMalformed, "the license key is not valid before %s", FormatTime(*claims.notBefore))
	}
	if claims.ExpireAt != nil && !claims.ExpireAt.Add(opts.ClockTolerance).After(now) {
		return nil, refuse(CodeExpired, "the license expired at %s", FormatTime(*claims.ExpireAt))
	}
	if opts.ProductCode != "" && claims.ProductCode != opts.ProductCode {
		return nil, refuse(CodeProduct, "the license key is for product %q, not %q", claims.ProductCode, opts.ProductCode)
	}
	if opts.MachineID != "" {
		needsMachine := claims.LicensingMode == "Activation" || claims.LicensingMode == "Floating"
		if claims.MachineID == "" && needsMachine {
			return nil, refuse(CodeMachine, "the license key names no machine")
		}
		if claims.MachineID != "" && claims.MachineID != opts.MachineID {
			return nil, refuse(CodeMachine, "the license key was issued to another machine")
		}
	}
	if opts.Nonce != "" && claims.Nonce != opts.Nonce {
		return nil, refuse(CodeNonce, "the license key does not echo this request's nonce: it is not the answer to this request")
	}
	return claims, nil
}

// GraceUntil is when offline use after this key's validation ends: IssuedAt + OfflineGraceDays, and for a Floating
// key no later than its exp (offline use of a floating seat is a borrow).
func (c *LicenseKeyClaims) GraceUntil() time.Time {
	until := c.IssuedAt.Add(time.Duration(c.OfflineGraceDays * float64(24*time.Hour)))
	if c.LicensingMode == "Floating" && c.Expiry != nil && c.Expiry.Before(until) {
		until = *c.Expiry
	}
	return until
}
