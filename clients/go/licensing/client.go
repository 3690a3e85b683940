// Package licensing is the Go client of the licensing service: activate, validate (verifying the signed answer
// against the service's JWKS, with offline grace), deactivate, floating seats, license files and air-gapped codes
// verified offline, the signed update check and session pings (CONTRACT section 14).
//
// Every error it returns is an *Error whose Code is the service's reason when the service refused, else one of the
// Code constants; every request has a timeout.
package licensing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Version of this client, sent in its User-Agent.
const Version = "0.1.0"

// Config says how a Client reaches the service.
type Config struct {
	// BaseURL is the service's address, e.g. https://licensing.example.com.
	BaseURL string
	// UserKey is the license's user key: the default of every call, and the credential when neither APIKey nor
	// BearerToken is given (the client signs in with it: POST /v1/auth/login {userKey}). Such a client serves that
	// license only (its bearer token names it): make one client per license. A call's own UserKey is for a client
	// with an API key.
	UserKey string
	// APIKey, sent in APIKeyHeader (default x-api-key); takes precedence over the other credentials.
	APIKey       string
	APIKeyHeader string
	// BearerToken obtained elsewhere; sent as is.
	BearerToken string
	// HTTPClient to use (default: NewHTTPClient(Timeout, "")).
	HTTPClient *http.Client
	// Timeout of each request (default DefaultTimeout); also applied through the request's context.
	Timeout time.Duration
	// TrustedKeys: verify signed answers with these keys instead of fetching GET /v1/extensions/keys (pinning them
	// in the application means an impersonated server cannot sign its own answers).
	TrustedKeys *JWKS
	// InstallID is this installation's random id, sent as X-Service-Install-Id on validations, update checks and
	// session pings.
	InstallID string
	// Now is the clock the client believes (default time.Now).
	Now func() time.Time
}

// Client talks to the licensing service over REST. It is safe for concurrent use.
type Client struct {
	baseURL      string
	http         *http.Client
	timeout      time.Duration
	userKey      string
	apiKey       string
	apiKeyHeader string
	bearer       string
	trusted      *JWKS
	installID    string
	now          func() time.Time

	mu      sync.Mutex
	session string
	renewAt time.Time
	keys    *JWKS
}

// New makes a client. The base URL must be absolute (http or https).
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, refuse(CodeMalformed, "the service's address %q is not an http(s) URL", cfg.BaseURL)
	}
	c := &Client{
		baseURL: strings.TrimRight(u.String(), "/"), http: cfg.HTTPClient, timeout: cfg.Timeout,
		userKey: cfg.UserKey, apiKey: cfg.APIKey, apiKeyHeader: cfg.APIKeyHeader, bearer: cfg.BearerToken,
		trusted: cfg.TrustedKeys, installID: cfg.InstallID, now: cfg.Now,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.http == nil {
		c.http, _ = NewHTTPClient(c.timeout, "")
	}
	if c.apiKeyHeader == "" {
		c.apiKeyHeader = "x-api-key"
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// BaseURL is the service's address without a trailing slash.
func (c *Client) BaseURL() string { return c.baseURL }

func (c *Client) userKeyOf(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	if c.userKey != "" {
		return c.userKey, nil
	}
	return "", refuse(CodeMalformed, "a user key is required: pass UserKey to the call or to the client")
}

// signIn returns the bearer token from the user key, signing in when there is none or it is about to expire.
func (c *Client) signIn(ctx context.Context, renew bool) (string, error) {
	c.mu.Lock()
	if !renew && c.session != "" && time.Now().Before(c.renewAt) {
		token := c.session
		c.mu.Unlock()
		return token, nil
	}
	c.mu.Unlock()
	a, err := c.do(ctx, http.MethodPost, "/v1/auth/login", nil, map[string]string{"userKey": c.userKey})
	if err != nil {
		return "", err
	}
	o, err := a.object("login")
	if err != nil {
		return "", err
	}
	token, err := o.str("token")
	if err != nil {
		return "", refuseWith(CodeMalformed, err, "the sign-in answer has no token")
	}
	expiresIn, _, _ := o.optNum("expiresIn")
	lifetime := time.Duration(expiresIn * float64(time.Second))
	c.mu.Lock()
	c.session = token
	// Renew a tenth of the lifetime early (at most a minute) so no request carries a token that expires in flight.
	c.renewAt = time.Now().Add(lifetime - min(time.Minute, lifetime/10))
	c.mu.Unlock()
	return token, nil
}

// credentials returns the credential header, and whether it came from the user key (so can be renewed).
func (c *Client) credentials(ctx context.Context) (map[string]string, bool, error) {
	switch {
	case c.apiKey != "":
		return map[string]string{c.apiKeyHeader: c.apiKey}, false, nil
	case c.bearer != "":
		return map[string]string{"Authorization": "Bearer " + c.bearer}, false, nil
	case c.userKey != "":
		token, err := c.signIn(ctx, false)
		if err != nil {
			return nil, false, err
		}
		return map[string]string{"Authorization": "Bearer " + token}, true, nil
	}
	return map[string]string{}, false, nil
}

// post sends a licensing call with credentials; a session token the service refuses is renewed once.
func (c *Client) post(ctx context.Context, path string, body map[string]any, extra map[string]string) (obj, error) {
	headers, renewable, err := c.credentials(ctx)
	if err != nil {
		return obj{}, err
	}
	for k, v := range extra {
		headers[k] = v
	}
	for k, v := range body {
		if s, ok := v.(string); ok && s == "" {
			delete(body, k)
		}
	}
	a, err := c.do(ctx, http.MethodPost, path, headers, body)
	if e, ok := err.(*Error); ok && renewable && e.HTTPStatus == http.StatusUnauthorized && e.Code == "http401" {
		token, err := c.signIn(ctx, true)
		if err != nil {
			return obj{}, err
		}
		headers["Authorization"] = "Bearer " + token
		a, err = c.do(ctx, http.MethodPost, path, headers, body)
		if err != nil {
			return obj{}, err
		}
	} else if err != nil {
		return obj{}, err
	}
	return a.object(path)
}

func malformedAnswer(what string, err error) error {
	return refuseWith(CodeMalformed, err, "the %s answer does not follow the contract: %v", what, err)
}

// Counts is how many machines or seats are in use, and the license's limit (0 = unlimited).
type Counts struct {
	ActiveClientCount int
	MaxClientCount    int
}

func countsOf(o obj) (Counts, error) {
	active, err := o.num("activeClientCount")
	if err != nil {
		return Counts{}, err
	}
	max, err := o.num("maxClientCount")
	return Counts{ActiveClientCount: int(active), MaxClientCount: int(max)}, err
}

// ActivateRequest: POST /v1/license/activate. UserKey defaults to the client's.
type ActivateRequest struct {
	UserKey, MachineID, ClientID, ClientName, ProductCode, Version, Nonce string
}

// Activation is what activate answers.
type Activation struct {
	LicenseToken  string
	TokenExpireAt *time.Time
	Counts
	License *License
}

// Activate activates the license on a machine. Idempotent per (license, machine, client): a repeat returns the same
// token, refreshed. Over the activation limit the service refuses with "alreadyActivated".
func (c *Client) Activate(ctx context.Context, r ActivateRequest) (*Activation, error) {
	userKey, err := c.userKeyOf(r.UserKey)
	if err != nil {
		return nil, err
	}
	o, err := c.post(ctx, "/v1/license/activate", map[string]any{
		"userKey": userKey, "machineId": r.MachineID, "clientId": r.ClientID, "clientName": r.ClientName,
		"productCode": r.ProductCode, "version": r.Version, "nonce": r.Nonce,
	}, nil)
	if err != nil {
		return nil, err
	}
	out := &Activation{}
	if out.LicenseToken, err = o.str("licenseToken"); err != nil {
		return nil, malformedAnswer("activate", err)
	}
	if out.TokenExpireAt, err = o.optDate("tokenExpireAt"); err != nil {
		return nil, malformedAnswer("activate", err)
	}
	if out.Counts, err = countsOf(o); err != nil {
		return nil, malformedAnswer("activate", err)
	}
	if out.License, err = licenseFromJSON(o.m["license"]); err != nil {
		return nil, malformedAnswer("activate", err)
	}
	return out, nil
}

// DeactivateRequest: POST /v1/license/deactivate.
type DeactivateRequest struct {
	UserKey, MachineID, ClientID, LicenseToken string
}

// Deactivation is what deactivate (and release) answer.
type Deactivation struct {
	LicenseID string
	Counts
}

func deactivationOf(o obj, what string) (*Deactivation, error) {
	id, err := o.str("licenseId")
	if err != nil {
		return nil, malformedAnswer(what, err)
	}
	counts, err := countsOf(o)
	if err != nil {
		return nil, malformedAnswer(what, err)
	}
	return &Deactivation{LicenseID: id, Counts: counts}, nil
}

// Deactivate frees the machine's activation.
func (c *Client) Deactivate(ctx context.Context, r DeactivateRequest) (*Deactivation, error) {
	userKey, err := c.userKeyOf(r.UserKey)
	if err != nil {
		return nil, err
	}
	o, err := c.post(ctx, "/v1/license/deactivate", map[string]any{
		"userKey": userKey, "machineId": r.MachineID, "clientId": r.ClientID, "licenseToken": r.LicenseToken,
	}, nil)
	if err != nil {
		return nil, err
	}
	return deactivationOf(o, "deactivate")
}

// ValidateRequest: POST /v1/license/validate. Nonce defaults to a fresh random one, which the signed license key
// must echo.
type ValidateRequest struct {
	UserKey, MachineID, ClientID, LicenseToken, ProductCode, Version, Nonce string
}

// Validation is a validation answer whose signed license key verified.
type Validation struct {
	LicenseID     string
	Status        string
	License       *License
	LicenseToken  string
	TokenExpireAt *time.Time
	ServerTime    time.Time
	Nonce         string
	// Claims is the verified payload of license.licenseKey: what the service signed for this machine.
	Claims *LicenseKeyClaims
	// Answer is the answer's JSON text as received (what the offline grace keeps).
	Answer json.RawMessage
}

// Validate validates the license online and verifies the answer: the signed license key against the service's JWKS
// (or Config.TrustedKeys), for this machine, product (when the request names one) and nonce, as of the client's
// clock. An answer carrying no license key (no machine named, nothing issued) is malformed: it proves nothing.
func (c *Client) Validate(ctx context.Context, r ValidateRequest) (*Validation, error) {
	userKey, err := c.userKeyOf(r.UserKey)
	if err != nil {
		return nil, err
	}
	if r.Nonce == "" {
		r.Nonce = NewNonce()
	}
	extra := map[string]string{}
	if c.installID != "" {
		extra["X-Service-Install-Id"] = c.installID
	}
	o, err := c.post(ctx, "/v1/license/validate", map[string]any{
		"userKey": userKey, "machineId": r.MachineID, "clientId": r.ClientID, "licenseToken": r.LicenseToken,
		"productCode": r.ProductCode, "version": r.Version, "nonce": r.Nonce,
	}, extra)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(o.m)
	keys, err := c.verificationKeys(ctx, o)
	if err != nil {
		return nil, err
	}
	v, err := VerifyValidation(raw, keys, VerifyOptions{Now: c.now(), MachineID: r.MachineID, ProductCode: r.ProductCode, Nonce: r.Nonce})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// verificationKeys: the trusted keys, else the service's (fetched again once when the license key's kid is unknown,
// for a rotation).
func (c *Client) verificationKeys(ctx context.Context, o obj) (*JWKS, error) {
	if c.trusted != nil {
		return c.trusted, nil
	}
	keys, err := c.Keys(ctx, false)
	if err != nil {
		return nil, err
	}
	if lic, ok := o.m["license"].(map[string]any); ok {
		if key, ok := lic["licenseKey"].(string); ok {
			if kid := kidOf(key); kid != "" {
				if _, known := keys.Key(kid); !known {
					return c.Keys(ctx, true)
				}
			}
		}
	}
	return keys, nil
}

func kidOf(compact string) string {
	head, _, _ := strings.Cut(compact, ".")
	var h jwsHeader
	if b, ok := decodeBase64(head); ok && json.Unmarshal(b, &h) == nil {
		return h.Kid
	}
	return ""
}

// VerifyValidation verifies a validation answer (the JSON body of POST /v1/license/validate) offline: its
// license.licenseKey as VerifyLicenseKey does (no key: malformed). The answer's other members are read, but only
// the signed claims are to be trusted.
func VerifyValidation(answerJSON []byte, jwks *JWKS, opts VerifyOptions) (*Validation, error) {
	v, err := decodeJSON(answerJSON)
	if err != nil {
		return nil, refuseWith(CodeMalformed, err, "the validation answer is not JSON")
	}
	o, err := asObj(v, "validate")
	if err != nil {
		return nil, refuseWith(CodeMalformed, err, "the validation answer is not a JSON object")
	}
	lic, err := o.sub("license")
	if err != nil {
		return nil, refuseWith(CodeMalformed, err, "the validation answer has no license")
	}
	key, _ := lic.m["licenseKey"].(string)
	if key == "" {
		return nil, refuse(CodeMalformed, "the validation answer carries no signed license key to verify")
	}
	claims, err := VerifyLicenseKey(key, jwks, opts)
	if err != nil {
		return nil, err
	}
	out := &Validation{Claims: claims, Answer: append(json.RawMessage{}, answerJSON...)}
	// Unsigned members: read leniently (the claims above are what counts).
	out.LicenseID, _ = o.m["licenseId"].(string)
	out.Status, _ = o.m["status"].(string)
	out.LicenseToken, _ = o.m["licenseToken"].(string)
	out.Nonce, _ = o.m["nonce"].(string)
	out.TokenExpireAt, _ = o.optDate("tokenExpireAt")
	if t, _ := o.optDate("serverTime"); t != nil {
		out.ServerTime = *t
	}
	if l, err := licenseFromJSON(o.m["license"]); err == nil {
		out.License = l
	}
	if out.LicenseID == "" {
		out.LicenseID = claims.LicenseID
	}
	return out, nil
}

// Keys returns the service's JWK Set (GET /v1/extensions/keys), cached by the client; refresh fetches it again.
// Store it with the application (SaveJWKS) to verify offline.
func (c *Client) Keys(ctx context.Context, refresh bool) (*JWKS, error) {
	c.mu.Lock()
	if c.keys != nil && !refresh {
		keys := c.keys
		c.mu.Unlock()
		return keys, nil
	}
	c.mu.Unlock()
	a, err := c.do(ctx, http.MethodGet, "/v1/extensions/keys", nil, nil)
	if err != nil {
		return nil, err
	}
	keys, err := ParseJWKS(a.body)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.keys = keys
	c.mu.Unlock()
	return keys, nil
}

// SaveJWKS writes a key set to a file (atomically), for offline verification later.
func SaveJWKS(path string, keys *JWKS) error {
	data, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// LoadJWKS reads a key set saved with SaveJWKS (or downloaded from GET /v1/extensions/keys).
func LoadJWKS(path string) (*JWKS, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseJWKS(data)
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// CheckoutRequest: POST /v1/license/checkout. TTL (seconds, at least 60) only shortens the file's lifetime; Encrypt
// seals it for this machine (user key + machine id).
type CheckoutRequest struct {
	UserKey, MachineID, ClientID string
	TTL                          int
	Encrypt                      bool
}

// FileAnswer is a license file as the service answers it: save LicenseFile (as <licenseId>.lic) and check it with
// VerifyLicenseFile.
type FileAnswer struct {
	LicenseFile string
	IssuedAt    time.Time
	ExpiresAt   time.Time
	Encrypted   bool
}

// Checkout checks out a license file for a machine, to run offline until its ExpiresAt.
func (c *Client) Checkout(ctx context.Context, r CheckoutRequest) (*FileAnswer, error) {
	userKey, err := c.userKeyOf(r.UserKey)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"userKey": userKey, "machineId": r.MachineID, "clientId": r.ClientID}
	if r.TTL > 0 {
		body["ttl"] = r.TTL
	}
	if r.Encrypt {
		body["encrypt"] = true
	}
	o, err := c.post(ctx, "/v1/license/checkout", body, nil)
	if err != nil {
		return nil, err
	}
	out := &FileAnswer{}
	if out.LicenseFile, err = o.str("licenseFile"); err != nil {
		return nil, malformedAnswer("checkout", err)
	}
	issued, err1 := o.optDate("issuedAt")
	expires, err2 := o.optDate("expiresAt")
	if err1 != nil || err2 != nil || issued == nil || expires == nil {
		return nil, refuse(CodeMalformed, "the checkout answer's issuedAt or expiresAt is missing")
	}
	out.IssuedAt, out.ExpiresAt = *issued, *expires
	out.Encrypted, _, _ = o.optBool("encrypted")
	return out, nil
}

// FloatingRequest: POST /v1/license/request (ClientID is required for a floating license).
type FloatingRequest struct {
	UserKey, MachineID, ClientID, ClientName string
}

// FloatingGrant is a granted floating seat: its token (fltk_…) and the seconds between heartbeats the service expects.
type FloatingGrant struct {
	LicenseToken      string
	TokenExpireAt     *time.Time
	HeartbeatInterval time.Duration
	Counts
	License *License
}

// RequestSeat takes a floating seat (or the one this machine and client already hold). All seats taken: the service
// refuses with "seatsExhausted". Keep it with heartbeats (Heartbeat, or HoldSeat which does it for you).
func (c *Client) RequestSeat(ctx context.Context, r FloatingRequest) (*FloatingGrant, error) {
	userKey, err := c.userKeyOf(r.UserKey)
	if err != nil {
		return nil, err
	}
	o, err := c.post(ctx, "/v1/license/request", map[string]any{
		"userKey": userKey, "machineId": r.MachineID, "clientId": r.ClientID, "clientName": r.ClientName,
	}, nil)
	if err != nil {
		return nil, err
	}
	g := &FloatingGrant{}
	if g.LicenseToken, err = o.str("licenseToken"); err != nil {
		return nil, malformedAnswer("request", err)
	}
	g.TokenExpireAt, _ = o.optDate("tokenExpireAt")
	interval, _ := o.num("heartbeatInterval")
	g.HeartbeatInterval = time.Duration(interval * float64(time.Second))
	if g.Counts, err = countsOf(o); err != nil {
		return nil, malformedAnswer("request", err)
	}
	if g.License, err = licenseFromJSON(o.m["license"]); err != nil {
		return nil, malformedAnswer("request", err)
	}
	return g, nil
}

// Beat is what a heartbeat answers.
type Beat struct {
	TokenExpireAt     *time.Time
	HeartbeatInterval time.Duration
	Counts
}

// Heartbeat keeps a floating seat alive (POST /v1/license/heartbeat).
func (c *Client) Heartbeat(ctx context.Context, licenseToken string) (*Beat, error) {
	o, err := c.post(ctx, "/v1/license/heartbeat", map[string]any{"licenseToken": licenseToken}, nil)
	if err != nil {
		return nil, err
	}
	b := &Beat{}
	b.TokenExpireAt, _ = o.optDate("tokenExpireAt")
	interval, _ := o.num("heartbeatInterval")
	b.HeartbeatInterval = time.Duration(interval * float64(time.Second))
	if b.Counts, err = countsOf(o); err != nil {
		return nil, malformedAnswer("heartbeat", err)
	}
	return b, nil
}

// Release gives a floating seat back (POST /v1/license/release). An unknown token: "licenseTokenNotFound".
func (c *Client) Release(ctx context.Context, licenseToken string) (*Deactivation, error) {
	o, err := c.post(ctx, "/v1/license/release", map[string]any{"licenseToken": licenseToken, "userKey": c.userKey}, nil)
	if err != nil {
		return nil, err
	}
	return deactivationOf(o, "release")
}

// statePath joins a state directory and a file name.
func statePath(dir, name string) string { return filepath.Join(dir, name) }
