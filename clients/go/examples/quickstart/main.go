// Command quickstart shows the Go client end to end against a licensing service, as a protected application uses it
// (docs/clients/go.md): a session for release health, activation, validation with offline grace, a license file
// verified offline, an air-gapped activation, a floating seat (request, heartbeat, release), the signed update check
// and deactivation. It prints each step and exits 0, 1 when a step failed, 2 when a setting is missing.
//
// Its settings, from the environment (the interop suite, `npm run interop`, sets them for a fresh license):
//
//	LICENSING_URL           the service's address, e.g. https://127.0.0.1:5000 (required)
//	LICENSING_PRODUCT       the product code (required)
//	LICENSING_USER_KEY      an Activation license's user key (required)
//	LICENSING_MACHINE       this machine's id (default: derived from /etc/machine-id or the host name)
//	LICENSING_FLOATING_KEY  a Floating license's user key (optional: the seat step is skipped without it)
//	LICENSING_CA            a PEM certificate to trust, e.g. .wrangler/dev-cert/cert.pem (optional)
//	LICENSING_STATE         the state directory (default: a folder of the temporary directory)
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"example.com/licensing/clients/go/licensing"
)

// version is the running application's version.
const version = "1.0.0"

// Settings is what the application knows: the service, its product, the license's user key, where it keeps state.
type Settings struct {
	URL, CA, Product     string
	UserKey, FloatingKey string
	Machine              string // this machine's id
	Dir                  string // the application's user-data directory
}

// settingsFromEnv reads the LICENSING_* variables.
func settingsFromEnv() (Settings, error) {
	s := Settings{
		URL: os.Getenv("LICENSING_URL"), CA: os.Getenv("LICENSING_CA"), Product: os.Getenv("LICENSING_PRODUCT"),
		UserKey: os.Getenv("LICENSING_USER_KEY"), FloatingKey: os.Getenv("LICENSING_FLOATING_KEY"),
		Machine: os.Getenv("LICENSING_MACHINE"), Dir: os.Getenv("LICENSING_STATE"),
	}
	var missing []string
	for _, v := range []struct{ name, value string }{
		{"LICENSING_URL", s.URL}, {"LICENSING_PRODUCT", s.Product}, {"LICENSING_USER_KEY", s.UserKey},
	} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("set %s", strings.Join(missing, ", "))
	}
	if s.Machine == "" {
		s.Machine = machineID(s.Product)
	}
	if s.Dir == "" {
		s.Dir = filepath.Join(os.TempDir(), "licensing-quickstart")
	}
	return s, os.MkdirAll(s.Dir, 0o700)
}

// machineID: a stable id of this machine, hashed with the application's own salt so it does not correlate across
// vendors.
func machineID(salt string) string {
	id, err := os.ReadFile("/etc/machine-id")
	if err != nil || len(strings.TrimSpace(string(id))) == 0 {
		host, _ := os.Hostname()
		id = []byte(host)
	}
	sum := sha256.Sum256([]byte(salt + ":" + strings.TrimSpace(string(id))))
	return hex.EncodeToString(sum[:16])
}

// platform is this build's platform as the service names them (win-x64, darwin-arm64, linux-x64 …).
func platform() string {
	os, arch := runtime.GOOS, runtime.GOARCH
	if os == "windows" {
		os = "win"
	}
	if arch == "amd64" {
		arch = "x64"
	}
	return os + "-" + arch
}

func run(ctx context.Context, s Settings, out io.Writer) error {
	httpClient, err := licensing.NewHTTPClient(15*time.Second, s.CA) // a timeout on every request
	if err != nil {
		return err
	}
	installID := "install-" + s.Machine // an application keeps a random id per installation
	client, err := licensing.New(licensing.Config{
		BaseURL: s.URL, UserKey: s.UserKey, HTTPClient: httpClient, InstallID: installID,
	})
	if err != nil {
		return err
	}

	// Sessions: this run is recorded as started now, and as exited (or crashed, on a panic) when run returns.
	// Offline, the sessions wait in the directory for the next start.
	tracker, err := client.TrackSession(ctx, licensing.SessionOptions{
		Dir: s.Dir, ProductCode: s.Product, Version: version, Platform: platform(), InstallID: installID,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "session %s started (%s %s)\n", tracker.ID(), version, platform())
	// Deferred calls run last first: Recover (registered second) sees a panic before the normal end does.
	defer func() {
		sent, endErr := tracker.End(context.Background(), licensing.SessionExited)
		if endErr != nil {
			fmt.Fprintf(out, "session ended; it waits in %s to be sent: %v\n", s.Dir, endErr)
			return
		}
		fmt.Fprintf(out, "session ended (exited), %d session(s) sent\n", sent)
	}()
	defer tracker.Recover()

	// Activate this machine (idempotent: a repeat returns the same activation).
	activation, err := client.Activate(ctx, licensing.ActivateRequest{MachineID: s.Machine, ProductCode: s.Product, ClientName: "Office PC"})
	var refusal *licensing.Error
	if errors.As(err, &refusal) && refusal.Code == "alreadyActivated" {
		return fmt.Errorf("every seat of this license is in use on other machines: deactivate one first")
	} else if err != nil {
		return err
	}
	fmt.Fprintf(out, "activated %s on %s (%d of %d machines)\n", activation.License.LicenseID, s.Machine,
		activation.ActiveClientCount, activation.MaxClientCount)

	// Validate at each start: online, the signed answer is verified against the service's keys and kept in Dir;
	// while the service cannot be reached, the kept validation keeps the license usable for the signed grace days.
	grace := &licensing.Grace{Client: client, Dir: s.Dir, ProductCode: s.Product}
	validation, err := grace.Validate(ctx, licensing.ValidateRequest{MachineID: s.Machine, Version: version})
	switch {
	case errors.Is(err, licensing.ErrGrace):
		return fmt.Errorf("connect to the internet to validate the license: %w", err)
	case err != nil:
		return err // revoked, expired, deactivated (the service's reason), a clock set back…
	}
	fmt.Fprintf(out, "valid: %s, online %v, usable offline until %s, features %v\n", validation.Claims.LicenseID,
		validation.Online, validation.GraceUntil.Format(time.DateOnly), validation.Claims.Features)

	// A license file, to run offline until it expires: encrypted for a machine, verified without the network. A
	// machine that holds a file cannot be deactivated until it expires, so this one is another machine of the
	// license (say the laptop that travels), activated first.
	laptop := s.Machine + "-laptop"
	if _, err := client.Activate(ctx, licensing.ActivateRequest{MachineID: laptop, ProductCode: s.Product, ClientName: "Laptop"}); err != nil {
		return err
	}
	file, err := client.Checkout(ctx, licensing.CheckoutRequest{MachineID: laptop, Encrypt: true})
	if err != nil {
		return err
	}
	path := filepath.Join(s.Dir, activation.License.LicenseID+".lic")
	if err := os.WriteFile(path, []byte(file.LicenseFile), 0o600); err != nil {
		return err
	}
	keys, err := licensing.LoadJWKS(filepath.Join(s.Dir, licensing.JWKSFile)) // kept by the validation above
	if err != nil {
		return err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	verified, err := licensing.VerifyLicenseFile(string(text), licensing.FileOptions{
		JWKS: keys, MachineID: laptop, UserKey: s.UserKey, ProductCode: s.Product,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "license file %s for %s verified offline: valid until %s (encrypted %v)\n", filepath.Base(path),
		laptop, verified.ExpiresAt.Format(time.DateOnly), verified.Encrypted)

	// Air-gapped activation: show this code (or its QR code) to a person with a connected device, who enters it at
	// <service>/activate/ and brings back a response code; keep the nonce until then. It activates the machine and
	// gives it a license file: a machine of its own, never connected.
	airGapped := s.Machine + "-airgapped"
	request := licensing.CreateActivationRequest(licensing.OfflineRequest{
		UserKey: s.UserKey, MachineID: airGapped, ProductCode: s.Product,
	}, strings.TrimRight(s.URL, "/")+"/activate/")
	fmt.Fprintf(out, "air-gap request code for %s: %s\n", airGapped, request.RequestCode)
	// Here the example plays the person's part, with the route behind the /activate/ page; an application only
	// shows the code and reads the answer the person types in.
	typed, err := personAtTheActivationPage(ctx, httpClient, s.URL, request.RequestCode)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "response code from the activation page: %s\n", typed)
	response, err := licensing.VerifyActivationResponse(typed, licensing.FileOptions{
		JWKS: keys, MachineID: airGapped, Nonce: request.Nonce, ProductCode: s.Product,
	})
	if err != nil {
		return err // malformed (mistyped: a checksum), nonce (the answer to another request), machine, signature…
	}
	// Save response.Saved as the license file: VerifyLicenseFile takes it at each start.
	fmt.Fprintf(out, "air-gapped activation of %s verified offline, valid until %s\n", response.License.LicenseID,
		response.ExpiresAt.Format(time.DateOnly))

	// A floating seat: held while the work runs, kept alive by heartbeats (a goroutine sends them every
	// heartbeatInterval; Beat sends one now), given back at the end.
	if s.FloatingKey != "" {
		// A client serves one license: the floating license's own (it signs in with its user key).
		floating, err := licensing.New(licensing.Config{BaseURL: s.URL, UserKey: s.FloatingKey, HTTPClient: httpClient})
		if err != nil {
			return err
		}
		seat, err := floating.HoldSeat(ctx, licensing.FloatingRequest{MachineID: s.Machine, ClientID: "worker-1"},
			licensing.SeatOptions{OnError: func(err error, terminal bool) {
				if terminal {
					fmt.Fprintln(out, "seat lost:", err)
				}
			}})
		switch {
		case errors.As(err, &refusal) && refusal.Code == "seatsExhausted":
			fmt.Fprintln(out, "every floating seat is taken: try again later")
		case err != nil:
			return err
		default:
			fmt.Fprintf(out, "seat of %s taken, heartbeat every %s\n", seat.Grant().License.LicenseID, seat.Grant().HeartbeatInterval)
			if lost := seat.Beat(ctx); lost || seat.Err() != nil {
				return fmt.Errorf("the seat's heartbeat failed: %w", seat.Err())
			}
			fmt.Fprintln(out, "seat heartbeat sent")
			if _, err := seat.Release(ctx); err != nil {
				return err
			}
			fmt.Fprintln(out, "seat released")
		}
	}

	// The signed update check (its signature is verified before it is returned).
	update, err := client.CheckForUpdate(ctx, licensing.UpdateCheckRequest{ProductCode: s.Product, Platform: platform(), Version: version})
	if err != nil {
		return err
	}
	switch {
	case update.Available && update.Download != nil: // update.Required: install it now; update.Rollback: a downgrade
		fmt.Fprintf(out, "update %s available: %s (%d bytes, sha512 %s…)\n", update.Version, update.Download.URL,
			update.Download.Size, update.Download.SHA512[:min(8, len(update.Download.SHA512))])
	case update.Available:
		fmt.Fprintf(out, "update %s exists but is not offered to this license: %s\n", update.Version, update.WithheldReason)
	default:
		fmt.Fprintf(out, "update check: up to date (%s on %s)\n", version, platform())
	}

	// Deactivate this machine (moving the license to another one): refused with licenseFileHeld while the machine
	// holds a license file, deactivationLimit past the month's limit.
	if _, err := client.Deactivate(ctx, licensing.DeactivateRequest{MachineID: s.Machine}); err != nil {
		return err
	}
	fmt.Fprintf(out, "deactivated %s\n", s.Machine)
	return nil
}

// personAtTheActivationPage does what the service's /activate/ page does with a request code: the anonymous POST
// /v1/license/offline-activation, whose answer holds the response code the page shows.
func personAtTheActivationPage(ctx context.Context, httpClient *http.Client, url, requestCode string) (string, error) {
	body, _ := json.Marshal(map[string]string{"requestCode": requestCode})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+"/v1/license/offline-activation", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var answer struct {
		ResponseCode string `json:"responseCode"`
		Message      string `json:"message"`
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil || res.StatusCode != http.StatusOK || answer.ResponseCode == "" {
		return "", fmt.Errorf("the activation page refused the request code: HTTP %d %s", res.StatusCode, answer.Message)
	}
	return answer.ResponseCode, nil
}

func main() {
	s, err := settingsFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), s, os.Stdout); err != nil {
		var refusal *licensing.Error
		if errors.As(err, &refusal) {
			fmt.Fprintf(os.Stderr, "quickstart: refused (%s): %s\n", refusal.Code, refusal.Message)
		} else {
			fmt.Fprintln(os.Stderr, "quickstart:", err)
		}
		os.Exit(1)
	}
}
