// Command interop is the Go interop program of CONTRACT section 14: `interop <case> [options]` runs one case with
// the Go client and prints one JSON object on stdout; it exits 0 when the case succeeded, 1 when it was refused
// (`{"error":{"code","message"}}`, the refusal codes of CONTRACT 14), 2 on misuse. scripts/interop.mjs runs it
// against a local service, with the other languages' programs (clients/interop.json).
//
// Cases: activate, deactivate, validate, seat-request, seat-heartbeat, seat-release, checkout, verify-file,
// airgap-request, airgap-verify, update-check, session, and bench-validate (bench/clients.mjs: validate with its
// verification over one kept-alive connection for --seconds, then the verification alone). Options: --url, --product,
// --user-key, --machine, --client, --version, --platform, --file, --state, --now, --ca, --nonce, --status, --seconds.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"example.com/licensing/clients/go/licensing"
)

// timeout bounds every request: a network failure is `network`, never a hang.
const timeout = 15 * time.Second

// verifyTime is how long bench-validate repeats the verification alone.
const verifyTime = time.Second

type usageError struct{ message string }

func (u usageError) Error() string { return u.message }

type options struct {
	url, product, userKey, machine, client, version, platform, file, state, now, ca, nonce, status, seconds string
	set                                                                                                     map[string]bool
}

func parse(args []string) (*options, error) {
	o := &options{set: map[string]bool{}}
	fs := flag.NewFlagSet("interop", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for name, target := range map[string]*string{
		"url": &o.url, "product": &o.product, "user-key": &o.userKey, "machine": &o.machine, "client": &o.client,
		"version": &o.version, "platform": &o.platform, "file": &o.file, "state": &o.state, "now": &o.now,
		"ca": &o.ca, "nonce": &o.nonce, "status": &o.status, "seconds": &o.seconds,
	} {
		fs.StringVar(target, name, "", "")
	}
	if err := fs.Parse(args); err != nil {
		return nil, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	return o, nil
}

func (o *options) need(name string) string {
	values := map[string]string{
		"url": o.url, "product": o.product, "user-key": o.userKey, "machine": o.machine, "client": o.client,
		"version": o.version, "platform": o.platform, "file": o.file, "nonce": o.nonce, "status": o.status,
	}
	if values[name] == "" {
		panic(usageError{"--" + name + " is required for this case"})
	}
	return values[name]
}

// clock is --now (the clock the client believes), else the computer's.
func (o *options) clock() time.Time {
	if o.now == "" {
		return time.Time{}
	}
	at, err := licensing.ParseTime(o.now)
	if err != nil {
		panic(usageError{"--now is not an ISO 8601 instant: " + o.now})
	}
	return at
}

// client of --url; with the license's --user-key (required) unless anonymous.
func (o *options) service(anonymous bool) *licensing.Client {
	httpClient, err := licensing.NewHTTPClient(timeout, o.ca)
	if err != nil {
		panic(usageError{err.Error()})
	}
	cfg := licensing.Config{BaseURL: o.need("url"), HTTPClient: httpClient, Timeout: timeout}
	if !anonymous {
		cfg.UserKey = o.need("user-key")
	}
	if at := o.clock(); !at.IsZero() {
		cfg.Now = func() time.Time { return at }
	}
	c, err := licensing.New(cfg)
	if err != nil {
		panic(usageError{err.Error()})
	}
	return c
}

func (o *options) stateDir() string {
	if o.state == "" {
		return ""
	}
	if err := os.MkdirAll(o.state, 0o755); err != nil {
		panic(usageError{"--state cannot be made: " + err.Error()})
	}
	return o.state
}

// keys: --state/jwks.json when present, else fetched once (and kept there when --state is given).
func (o *options) keys(ctx context.Context) (*licensing.JWKS, error) {
	if o.state != "" {
		if keys, err := licensing.LoadJWKS(filepath.Join(o.state, licensing.JWKSFile)); err == nil {
			return keys, nil
		}
	}
	keys, err := o.service(true).Keys(ctx, false)
	if err != nil {
		return nil, err
	}
	if dir := o.stateDir(); dir != "" {
		_ = licensing.SaveJWKS(filepath.Join(dir, licensing.JWKSFile), keys)
	}
	return keys, nil
}

// seatFile is where a seat's token waits between the seat cases (--state, else a folder of the temporary
// directory), named by the service, license, machine and client.
func (o *options) seatFile() string {
	dir := o.stateDir()
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "licensing-interop-go")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(usageError{err.Error()})
	}
	sum := sha256.Sum256([]byte(o.url + "\n" + o.userKey + "\n" + o.need("machine") + "\n" + o.need("client")))
	return filepath.Join(dir, "seat-"+hex.EncodeToString(sum[:8])+".json")
}

type keptSeat struct {
	LicenseToken string `json:"licenseToken"`
	LicenseID    string `json:"licenseId"`
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func run(ctx context.Context, name string, o *options) (any, error) {
	switch name {
	case "activate":
		machine := o.need("machine")
		a, err := o.service(false).Activate(ctx, licensing.ActivateRequest{
			MachineID: machine, ClientID: o.client, ProductCode: o.product, Version: o.version,
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"licenseId": a.License.LicenseID, "machineId": machine}, nil

	case "deactivate":
		_, err := o.service(false).Deactivate(ctx, licensing.DeactivateRequest{MachineID: o.need("machine"), ClientID: o.client})
		if err != nil {
			return nil, err
		}
		return map[string]any{}, nil

	case "validate":
		return validate(ctx, o)

	case "bench-validate":
		return benchValidate(ctx, o)

	case "seat-request":
		clientID := o.need("client")
		grant, err := o.service(false).RequestSeat(ctx, licensing.FloatingRequest{MachineID: o.need("machine"), ClientID: clientID})
		if err != nil {
			return nil, err
		}
		data, _ := json.Marshal(keptSeat{LicenseToken: grant.LicenseToken, LicenseID: grant.License.LicenseID})
		if err := os.WriteFile(o.seatFile(), data, 0o600); err != nil {
			return nil, fmt.Errorf("keeping the seat's token: %w", err)
		}
		return map[string]any{"licenseId": grant.License.LicenseID, "clientId": clientID}, nil

	case "seat-heartbeat", "seat-release":
		clientID := o.need("client")
		data, err := os.ReadFile(o.seatFile())
		var seat keptSeat
		if err != nil || json.Unmarshal(data, &seat) != nil || seat.LicenseToken == "" {
			panic(usageError{"no seat was requested for this machine and client (seat-request first)"})
		}
		c := o.service(false)
		if name == "seat-heartbeat" {
			if _, err := c.Heartbeat(ctx, seat.LicenseToken); err != nil {
				return nil, err
			}
			return map[string]any{"licenseId": seat.LicenseID, "clientId": clientID}, nil
		}
		released, err := c.Release(ctx, seat.LicenseToken)
		if err != nil {
			return nil, err
		}
		return map[string]any{"licenseId": released.LicenseID, "clientId": clientID}, nil

	case "checkout":
		path := o.need("file")
		answer, err := o.service(false).Checkout(ctx, licensing.CheckoutRequest{
			MachineID: o.need("machine"), ClientID: o.client, Encrypt: true,
		})
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(answer.LicenseFile), 0o644); err != nil {
			panic(usageError{"--file cannot be written: " + err.Error()})
		}
		return map[string]any{"expiresAt": licensing.FormatTime(answer.ExpiresAt)}, nil

	case "verify-file", "airgap-verify":
		text, err := os.ReadFile(o.need("file"))
		if err != nil {
			panic(usageError{"--file cannot be read: " + err.Error()})
		}
		machine := o.need("machine")
		nonce := ""
		if name == "airgap-verify" {
			nonce = o.need("nonce")
		}
		keys, err := o.keys(ctx)
		if err != nil {
			return nil, err
		}
		opts := licensing.FileOptions{
			JWKS: keys, MachineID: machine, ProductCode: o.product, ClientID: o.client, UserKey: o.userKey,
			Now: o.clock(), Nonce: nonce,
		}
		if name == "verify-file" {
			file, err := licensing.VerifyLicenseFile(string(text), opts)
			if err != nil {
				return nil, err
			}
			return map[string]any{"licenseId": file.License.LicenseID, "machineId": file.MachineID,
				"expiresAt": licensing.FormatTime(file.ExpiresAt), "productCode": file.Entitlements.ProductCode,
				"encrypted": file.Encrypted}, nil
		}
		r, err := licensing.VerifyActivationResponse(string(text), opts)
		if err != nil {
			return nil, err
		}
		return map[string]any{"licenseId": r.License.LicenseID, "machineId": r.MachineID,
			"productCode": r.Entitlements.ProductCode, "expiresAt": licensing.FormatTime(r.ExpiresAt)}, nil

	case "airgap-request":
		r := licensing.CreateActivationRequest(licensing.OfflineRequest{
			UserKey: o.need("user-key"), MachineID: o.need("machine"), ClientID: o.client, ProductCode: o.product,
			Nonce: o.nonce,
		}, "")
		return map[string]any{"requestCode": r.RequestCode, "nonce": r.Nonce}, nil

	case "update-check":
		c := o.service(true)
		check, err := c.CheckForUpdate(ctx, licensing.UpdateCheckRequest{
			ProductCode: o.need("product"), Platform: o.need("platform"), Version: o.need("version"),
			UserKey: o.userKey, InstallID: o.machine,
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"available": check.Available, "version": orNull(check.Version),
			"required": check.Required, "rollback": check.Rollback}, nil

	case "session":
		status := o.need("status")
		switch status {
		case licensing.SessionStarted, licensing.SessionExited, licensing.SessionCrashed, licensing.SessionAbnormal:
		default:
			panic(usageError{"--status is one of started, exited, crashed, abnormal"})
		}
		session := licensing.Session{ID: licensing.NewNonce(), Status: status, StartedAt: licensing.FormatTime(time.Now())}
		if status != licensing.SessionStarted {
			ms := int64(1000)
			session.DurationMs = &ms
		}
		accepted, err := o.service(true).SendSessions(ctx, licensing.SessionPing{
			ProductCode: o.need("product"), Version: o.need("version"), Platform: o.platform,
			InstallID: o.need("machine"), UserKey: o.userKey, Sessions: []licensing.Session{session},
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"accepted": accepted}, nil
	}
	panic(usageError{fmt.Sprintf("unknown case %q", name)})
}

func validate(ctx context.Context, o *options) (any, error) {
	request := licensing.ValidateRequest{MachineID: o.need("machine"), ClientID: o.client, ProductCode: o.product, Version: o.version}
	c := o.service(false)
	report := func(claims *licensing.LicenseKeyClaims, offline bool) map[string]any {
		out := map[string]any{
			"valid": true, "licenseId": claims.LicenseID, "verified": true, "offline": offline,
			"productCode": orNull(claims.ProductCode), "machineId": orNull(claims.MachineID),
			"licensingMode": orNull(claims.LicensingMode), "status": orNull(claims.Status),
			"offlineGraceDays": claims.OfflineGraceDays, "issuedAt": licensing.FormatTime(claims.IssuedAt),
			"expiresAt": nil,
		}
		if claims.Expiry != nil {
			out["expiresAt"] = licensing.FormatTime(*claims.Expiry)
		}
		return out
	}
	dir := o.stateDir()
	if dir == "" {
		v, err := c.Validate(ctx, request)
		if err != nil {
			return nil, err
		}
		return report(v.Claims, false), nil
	}
	grace := &licensing.Grace{Client: c, Dir: dir, ProductCode: o.product}
	result, err := grace.Validate(ctx, request)
	if err != nil {
		return nil, err
	}
	return report(result.Claims, !result.Online), nil
}

// benchValidate activates --machine (idempotent), then validates over and over for --seconds (default 5) with one
// client (one http.Transport: its connection is kept alive), each answer's license key verified by Validate for this
// machine, product and a fresh nonce; then times that verification alone (VerifyLicenseKey, the keys in hand) on the
// last answer for a second. It returns {requests, seconds, perSecond, verifyMicros}.
func benchValidate(ctx context.Context, o *options) (any, error) {
	seconds := 5.0
	if o.seconds != "" {
		s, err := strconv.ParseFloat(o.seconds, 64)
		if err != nil || s <= 0 || math.IsInf(s, 0) || math.IsNaN(s) {
			panic(usageError{"--seconds is a positive number of seconds, not " + o.seconds})
		}
		seconds = s
	}
	machine := o.need("machine")
	c := o.service(false)
	if _, err := c.Activate(ctx, licensing.ActivateRequest{MachineID: machine, ProductCode: o.product}); err != nil {
		return nil, err
	}
	request := licensing.ValidateRequest{MachineID: machine, ProductCode: o.product}
	last, err := c.Validate(ctx, request) // signs in and fetches the keys: not timed
	if err != nil {
		return nil, err
	}
	requests := 0
	started := time.Now()
	until := time.Duration(seconds * float64(time.Second))
	for time.Since(started) < until {
		if last, err = c.Validate(ctx, request); err != nil {
			return nil, err
		}
		requests++
	}
	elapsed := time.Since(started).Seconds()
	keys, err := c.Keys(ctx, false)
	if err != nil {
		return nil, err
	}
	if last.License == nil || last.License.LicenseKey == "" || last.Claims == nil {
		return nil, &licensing.Error{Code: licensing.CodeMalformed, Message: "the validation answer carries no license key"}
	}
	key := last.License.LicenseKey
	opts := licensing.VerifyOptions{MachineID: machine, ProductCode: o.product, Nonce: last.Claims.Nonce}
	verifications := 0
	verifyStarted := time.Now()
	for time.Since(verifyStarted) < verifyTime {
		if _, err := licensing.VerifyLicenseKey(key, keys, opts); err != nil {
			return nil, err
		}
		verifications++
	}
	verifyMicros := float64(time.Since(verifyStarted).Microseconds()) / float64(verifications)
	round := func(v float64, digits int) float64 { p := math.Pow(10, float64(digits)); return math.Round(v*p) / p }
	return map[string]any{
		"requests": requests, "seconds": round(elapsed, 3), "perSecond": round(float64(requests)/elapsed, 1),
		"verifyMicros": round(verifyMicros, 1),
	}, nil
}

func write(stdout io.Writer, value any) {
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		io.WriteString(stdout, `{"error":{"code":"malformed","message":"the output cannot be written as JSON"}}`+"\n")
	}
}

func usage(stdout io.Writer, message string) int {
	write(stdout, map[string]any{"error": map[string]string{"code": "usage", "message": message}})
	return 2
}

// interop runs `<case> [options]` and returns the exit code: 0 done, 1 refused, 2 misuse.
func interop(args []string, stdout io.Writer) (exit int) {
	if len(args) < 1 || args[0] == "" || args[0][0] == '-' {
		return usage(stdout, "interop <case> [options]: a case is required")
	}
	name := args[0]
	o, err := parse(args[1:])
	if err != nil {
		return usage(stdout, err.Error())
	}
	defer func() {
		if r := recover(); r != nil {
			u, ok := r.(usageError)
			if !ok {
				panic(r)
			}
			exit = usage(stdout, u.message)
		}
	}()
	out, err := run(context.Background(), name, o)
	if err != nil {
		code := licensing.CodeOf(err)
		if code == "" {
			code = licensing.CodeMalformed
		}
		message := err.Error()
		var lerr *licensing.Error
		if errors.As(err, &lerr) && lerr.Message != "" {
			message = lerr.Message
		}
		write(stdout, map[string]any{"error": map[string]string{"code": code, "message": message}})
		return 1
	}
	write(stdout, out)
	return 0
}

func main() { os.Exit(interop(os.Args[1:], os.Stdout)) }
