package licensing

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"regexp"
	"strings"
	"time"
)

// LicenseFileType is the JWS header typ of a license file.
const LicenseFileType = "license-file+jwt"

// encryptionInfo is the HKDF info of an encrypted license file's key.
const encryptionInfo = "license-file"

// Licensee is who the license is for.
type Licensee struct {
	Name    string `json:"name,omitempty"`
	Email   string `json:"email,omitempty"`
	Company string `json:"company,omitempty"`
}

// License is what an application knows of its license, as activate, validate, request and license files state it.
type License struct {
	LicenseID       string
	LicensingMode   string // File, Activation, Floating
	LicenseType     string // Standard, Demo, Trial
	Edition         string
	IssueDate       *time.Time
	ExpireAt        *time.Time // nil = perpetual
	SupportExpireAt *time.Time
	Features        []string
	Licensee        *Licensee // nil when the service sent none
	// LicenseKey is the compact JWS (ES256) to verify offline with VerifyLicenseKey; "" when none was issued.
	LicenseKey string
}

func licenseFromJSON(v any) (*License, error) {
	o, err := asObj(v, "license")
	if err != nil {
		return nil, err
	}
	l := &License{}
	if l.LicenseID, err = o.str("licenseId"); err != nil {
		return nil, err
	}
	if l.LicensingMode, err = o.enum("licensingMode", LicensingModes); err != nil {
		return nil, err
	}
	if l.LicenseType, err = o.enum("licenseType", LicenseTypes); err != nil {
		return nil, err
	}
	if l.Edition, err = o.optStr("edition"); err != nil {
		return nil, err
	}
	if l.IssueDate, err = o.optDate("issueDate"); err != nil {
		return nil, err
	}
	if l.ExpireAt, err = o.optDate("expireAt"); err != nil {
		return nil, err
	}
	if l.SupportExpireAt, err = o.optDate("supportExpireAt"); err != nil {
		return nil, err
	}
	if l.Features, err = o.strings("features"); err != nil {
		return nil, err
	}
	if l.LicenseKey, err = o.optStr("licenseKey"); err != nil {
		return nil, err
	}
	if o.has("licensee") {
		lo, err := o.sub("licensee")
		if err != nil {
			return nil, err
		}
		who := &Licensee{}
		for key, target := range map[string]*string{"name": &who.Name, "email": &who.Email, "company": &who.Company} {
			if *target, err = lo.optStr(key); err != nil {
				return nil, err
			}
		}
		// An empty licensee is no licensee, as gRPC's unset message is.
		if *who != (Licensee{}) {
			l.Licensee = who
		}
	}
	return l, nil
}

// Entitlements is what a license grants, as a license file states it.
type Entitlements struct {
	ProductCode     string
	LicenseType     string
	Edition         string
	Features        []string
	MaxClients      int // machines (Activation) or seats (Floating); 0 = unlimited
	ExpireAt        *time.Time
	SupportExpireAt *time.Time
}

func entitlementsFromJSON(v any) (*Entitlements, error) {
	o, err := asObj(v, "entitlements")
	if err != nil {
		return nil, err
	}
	e := &Entitlements{}
	if e.ProductCode, err = o.str("productCode"); err != nil {
		return nil, err
	}
	if e.LicenseType, err = o.str("licenseType"); err != nil {
		return nil, err
	}
	if e.Edition, err = o.optStr("edition"); err != nil {
		return nil, err
	}
	if e.Features, err = o.strings("features"); err != nil {
		return nil, err
	}
	maxClients, err := o.num("maxClients")
	if err != nil {
		return nil, err
	}
	e.MaxClients = int(maxClients)
	if e.ExpireAt, err = o.optDate("expireAt"); err != nil {
		return nil, err
	}
	if e.SupportExpireAt, err = o.optDate("supportExpireAt"); err != nil {
		return nil, err
	}
	return e, nil
}

// LicenseFile is a verified license file's content (or a verified LRS2 response code's, Version 2).
type LicenseFile struct {
	// Version: 1 for a license file (JWS), 2 for an LRS2 response code.
	Version      int
	License      *License // from an LRS2 code without Licensee, which the code does not carry
	Entitlements *Entitlements
	// MachineID and ClientID the file is bound to (from an LRS2 code: the ones checked against its hashes).
	MachineID string
	ClientID  string
	IssuedAt  time.Time
	ExpiresAt time.Time
	// Nonce of the request it answers (air-gapped activation).
	Nonce string
	// BorrowUntil: for a borrowed floating seat, when the borrow ends.
	BorrowUntil *time.Time
	Encrypted   bool
	KeyID       string
}

// FileOptions says what a license file must match (VerifyLicenseFile).
type FileOptions struct {
	// JWKS is the service's key set (GET /v1/extensions/keys), stored with the application.
	JWKS *JWKS
	// MachineID is this machine: a file issued to another one is refused (machine), and an encrypted one does not open.
	MachineID string
	// ProductCode, when given: a file of another product's license is refused (product).
	ProductCode string
	// ClientID, when given: a file naming another client is refused (machine).
	ClientID string
	// Now is the time to check against (zero: the computer's clock).
	Now time.Time
	// LastSeen is the latest time the application has seen: a clock earlier than it was set back (clock).
	LastSeen time.Time
	// UserKey opens an encrypted file.
	UserKey string
	// Nonce, when given: the file must name it (nonce).
	Nonce string
	// ClockSkew: how far the clock may be behind the service's before an issue time in the future counts as a clock
	// set back (0: the default, 300 seconds; negative: none). Expiry is checked exactly.
	ClockSkew time.Duration
}

var userKeySeparators = regexp.MustCompile(`[\s-]+`)

// CompactUserKey is a user key as the service compares it (Crockford base32 as people type it): upper case, without
// spaces and dashes, I and L read as 1, O as 0.
func CompactUserKey(typed string) string {
	s := userKeySeparators.ReplaceAllString(strings.ToUpper(typed), "")
	return strings.NewReplacer("I", "1", "L", "1", "O", "0").Replace(s)
}

// FileKey is the AES-256 key an encrypted file is sealed with: HKDF-SHA256(ikm = the user key in its compact form,
// salt = the machine id, info = "license-file"), 32 bytes.
func FileKey(userKey, machineID string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(CompactUserKey(userKey)), []byte(machineID), encryptionInfo, 32)
}

func decryptPayload(sealed obj, opts FileOptions) (any, error) {
	if enc, _ := sealed.m["enc"].(string); enc != "A256GCM" {
		return nil, refuse(CodeMalformed, "the license file is encrypted with %v, not A256GCM", sealed.m["enc"])
	}
	if opts.UserKey == "" {
		return nil, refuse(CodeDecrypt, "the license file is encrypted: pass the license's user key to open it")
	}
	ivText, _ := sealed.m["iv"].(string)
	ctText, _ := sealed.m["ciphertext"].(string)
	iv, okIV := decodeBase64(ivText)
	ciphertext, okCT := decodeBase64(ctText)
	if !okIV || !okCT || len(iv) == 0 {
		return nil, refuse(CodeMalformed, "the encrypted license file has no iv or ciphertext")
	}
	notForThis := func(err error) error {
		return refuseWith(CodeDecrypt, err, "the encrypted license file does not open with this machine id and user key: it was made for another machine or license")
	}
	key, err := FileKey(opts.UserKey, opts.MachineID)
	if err != nil {
		return nil, notForThis(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, notForThis(err)
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, notForThis(err)
	}
	plain, err := gcm.Open(nil, iv, ciphertext, nil)
	if err != nil {
		return nil, notForThis(err)
	}
	v, err := decodeJSON(plain)
	if err != nil {
		return nil, refuseWith(CodeMalformed, err, "the decrypted license file is not JSON")
	}
	return v, nil
}

// VerifyLicenseFile verifies a license file offline and returns its content: the ES256 signature by a key of the
// JWKS (unknownKey, signature), its type (malformed), opening it when encrypted (decrypt), the machine and client
// (machine), the nonce when given (nonce), the product when given (product), the clock (clock: earlier than the
// file's issue time or than LastSeen), and its lifetime and the license's expiry (expired).
//
// An air-gapped response code is taken too (LRS2, or LRS1 holding a file): the same checks over its signed layout.
func VerifyLicenseFile(file string, opts FileOptions) (*LicenseFile, error) {
	text := strings.TrimSpace(file)
	if !isCode(text) {
		return verifySignedFile(text, opts)
	}
	read, err := ReadResponseCode(text)
	if err != nil {
		return nil, err
	}
	if read.Version == 1 {
		return verifySignedFile(read.LicenseFile, opts)
	}
	return verifyCompactResponse(read, opts)
}

func verifySignedFile(jws string, opts FileOptions) (*LicenseFile, error) {
	header, payloadBytes, err := verifyCompact(jws, opts.JWKS, "license file")
	if err != nil {
		return nil, err
	}
	if header.Typ != LicenseFileType {
		return nil, refuse(CodeMalformed, "the signed text is not a license file (typ %q, not %s)", header.Typ, LicenseFileType)
	}
	outerValue, err := decodeJSON(payloadBytes)
	if err != nil {
		return nil, refuse(CodeMalformed, "the license file's payload is not a JSON object")
	}
	outer, err := asObj(outerValue, "license file")
	if err != nil {
		return nil, refuse(CodeMalformed, "the license file's payload is not a JSON object")
	}
	_, hasEnc := outer.m["enc"]
	_, hasCiphertext := outer.m["ciphertext"]
	encrypted := hasEnc || hasCiphertext
	payload := outer
	if encrypted {
		inner, err := decryptPayload(outer, opts)
		if err != nil {
			return nil, err
		}
		if payload, err = asObj(inner, "license file"); err != nil {
			return nil, refuse(CodeMalformed, "the license file's payload is not a JSON object")
		}
	}
	if v, ok, err := payload.optNum("v"); err != nil || !ok || v != 1 {
		return nil, refuse(CodeMalformed, "the license file is of version %v, not 1", payload.m["v"])
	}
	machine, err := payload.sub("machine")
	machineID, isText := machine.m["machineId"].(string)
	if err != nil || !isText {
		return nil, refuse(CodeMalformed, "the license file names no machine")
	}
	clientID, _ := machine.m["clientId"].(string)
	if machineID != opts.MachineID {
		return nil, refuse(CodeMachine, "the license file was issued to another machine")
	}
	if opts.ClientID != "" && clientID != "" && clientID != opts.ClientID {
		return nil, refuse(CodeMachine, "the license file was issued to another client on this machine")
	}
	nonce, _ := payload.m["nonce"].(string)
	if opts.Nonce != "" && nonce != opts.Nonce {
		return nil, refuse(CodeNonce, "the license file does not answer this request (another nonce): enter the answer to the code shown now")
	}
	date := func(o obj, key, what string) (time.Time, error) {
		s, _ := o.m[key].(string)
		t, err := ParseTime(s)
		if err != nil {
			return t, refuse(CodeMalformed, "the %s's %s is not a date", what, key)
		}
		return t, nil
	}
	issuedAt, err := date(payload, "issuedAt", "license file")
	if err != nil {
		return nil, err
	}
	expiresAt, err := date(payload, "expiresAt", "license file")
	if err != nil {
		return nil, err
	}
	var borrowUntil *time.Time
	if payload.has("borrow") {
		if borrow, err := payload.sub("borrow"); err == nil {
			until, err := date(borrow, "until", "license file's borrow")
			if err != nil {
				return nil, err
			}
			borrowUntil = &until
		}
	}
	license, err := licenseFromJSON(payload.m["license"])
	if err != nil {
		return nil, refuseWith(CodeMalformed, err, "the license file's license is not readable: %v", err)
	}
	entitlements, err := entitlementsFromJSON(payload.m["entitlements"])
	if err != nil {
		return nil, refuseWith(CodeMalformed, err, "the license file's license is not readable: %v", err)
	}
	ends := []time.Time{expiresAt}
	if borrowUntil != nil {
		ends = append(ends, *borrowUntil)
	}
	if err := inForce(license, entitlements, issuedAt, ends, opts); err != nil {
		return nil, err
	}
	return &LicenseFile{
		Version: 1, License: license, Entitlements: entitlements, MachineID: machineID, ClientID: clientID,
		IssuedAt: issuedAt, ExpiresAt: expiresAt, Nonce: nonce, BorrowUntil: borrowUntil, Encrypted: encrypted,
		KeyID: header.Kid,
	}, nil
}

// inForce: the checks every file passes after its signature and binding: the product when given (product), the
// clock (clock), the file's ends and the license's expiry (expired).
func inForce(license *License, e *Entitlements, issuedAt time.Time, ends []time.Time, opts FileOptions) error {
	if opts.ProductCode != "" && e.ProductCode != opts.ProductCode {
		return refuse(CodeProduct, "the license file is for product %q, not %q", e.ProductCode, opts.ProductCode)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	skew := opts.ClockSkew
	if skew == 0 {
		skew = 300 * time.Second
	} else if skew < 0 {
		skew = 0
	}
	if now.Add(skew).Before(issuedAt) {
		return refuse(CodeClock, "the computer's clock (%s) is earlier than the license file's issue time (%s): the clock was set back", FormatTime(now), FormatTime(issuedAt))
	}
	if !opts.LastSeen.IsZero() && now.Add(skew).Before(opts.LastSeen) {
		return refuse(CodeClock, "the computer's clock (%s) is earlier than the last time this application saw (%s): the clock was set back", FormatTime(now), FormatTime(opts.LastSeen))
	}
	end := ends[0]
	for _, t := range ends[1:] {
		if t.Before(end) {
			end = t
		}
	}
	if !now.Before(end) {
		return refuse(CodeExpired, "the license file expired at %s: check out a new one", FormatTime(end))
	}
	if license.ExpireAt != nil && !now.Before(*license.ExpireAt) {
		return refuse(CodeExpired, "the license expired at %s", FormatTime(*license.ExpireAt))
	}
	return nil
}

// verifyCompactResponse: an LRS2 code's checks (docs/reference/offline-codes.md): the signature by the key its key
// id names (unknownKey, signature), this machine's and client's hashes (machine), the nonce's when given (nonce),
// then those of every file.
func verifyCompactResponse(read *ResponseCode, opts FileOptions) (*LicenseFile, error) {
	code := read.Response
	var named []JWK
	if opts.JWKS != nil {
		for _, k := range opts.JWKS.Keys {
			if k.Kid != "" && k.Kty == "EC" && k.Crv == "P-256" && bytes.Equal(ShortHash(k.Kid, 4), code.KeyID[:]) {
				named = append(named, k)
			}
		}
	}
	if len(named) == 0 {
		return nil, refuse(CodeUnknownKey, "the response code is signed by a key this application does not know (not in its JWKS)")
	}
	var signer *JWK
	for i := range named {
		key, err := named[i].P256()
		if err == nil && verifyP1363(key, read.Signed, read.Signature) {
			signer = &named[i]
			break
		}
	}
	if signer == nil {
		return nil, refuse(CodeSignature, "the response code's signature does not verify: it was altered")
	}
	if !bytes.Equal(ShortHash(opts.MachineID, 8), code.Machine[:]) {
		return nil, refuse(CodeMachine, "the response code was issued to another machine")
	}
	clientMatched := code.Client != nil && opts.ClientID != ""
	if clientMatched && !bytes.Equal(ShortHash(opts.ClientID, 8), code.Client[:]) {
		return nil, refuse(CodeMachine, "the response code was issued to another client on this machine")
	}
	if opts.Nonce != "" && !bytes.Equal(ShortHash(opts.Nonce, 8), code.Nonce[:]) {
		return nil, refuse(CodeNonce, "the response code does not answer this request (another nonce): enter the answer to the code shown now")
	}
	date := func(seconds uint32) *time.Time {
		if seconds == 0 {
			return nil
		}
		t := time.Unix(int64(seconds), 0).UTC()
		return &t
	}
	license := &License{
		LicenseID: code.LicenseID, LicensingMode: LicensingModes[code.LicensingMode],
		LicenseType: LicenseTypes[code.LicenseType], Edition: code.Edition, IssueDate: date(code.IssueDate),
		ExpireAt: date(code.ExpireAt), SupportExpireAt: date(code.SupportExpireAt), Features: code.Features,
	}
	entitlements := &Entitlements{
		ProductCode: code.ProductCode, LicenseType: license.LicenseType, Edition: code.Edition,
		Features: append([]string{}, code.Features...), MaxClients: int(code.MaxClients),
		ExpireAt: license.ExpireAt, SupportExpireAt: license.SupportExpireAt,
	}
	issuedAt := time.Unix(int64(code.IssuedAt), 0).UTC()
	expiresAt := time.Unix(int64(code.ExpiresAt), 0).UTC()
	if err := inForce(license, entitlements, issuedAt, []time.Time{expiresAt}, opts); err != nil {
		return nil, err
	}
	file := &LicenseFile{
		Version: 2, License: license, Entitlements: entitlements, MachineID: opts.MachineID, IssuedAt: issuedAt,
		ExpiresAt: expiresAt, Nonce: opts.Nonce, KeyID: signer.Kid,
	}
	if clientMatched {
		file.ClientID = opts.ClientID
	}
	return file, nil
}
