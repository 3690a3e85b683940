package licensing_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/licensing/clients/go/licensing"
)

// The client's behaviour that needs no service: the network failing (a closed port, a listener that never answers,
// an answer that is not the service's), offline grace from a kept validation, and sessions waiting offline. Online
// behaviour is the interop suite's (`npm run interop`: every case against the real service, and the example).

const userKey = "8TBQ6-4N23T-EEKGS-W0N64-QHE7P"

func client(t *testing.T, url string, options ...func(*licensing.Config)) *licensing.Client {
	t.Helper()
	cfg := licensing.Config{BaseURL: url, UserKey: userKey, Timeout: 5 * time.Second}
	for _, o := range options {
		o(&cfg)
	}
	c, err := licensing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func code(t *testing.T, err error, want string) {
	t.Helper()
	var e *licensing.Error
	if !errors.As(err, &e) {
		t.Fatalf("expected a *licensing.Error %q, got %v", want, err)
	}
	if e.Code != want {
		t.Fatalf("expected the refusal %q, got %q: %v", want, e.Code, err)
	}
}

// closedPort is a base URL where nothing listens: a port that was just free.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	_ = ln.Close()
	return url
}

// silentListener accepts connections and never answers on them.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, conn)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

func TestClosedPortIsNetwork(t *testing.T) {
	c := client(t, closedPort(t))
	ctx := context.Background()
	_, err := c.Activate(ctx, licensing.ActivateRequest{MachineID: "PC-1", ProductCode: "studio"})
	code(t, err, licensing.CodeNetwork)
	var e *licensing.Error
	if !errors.As(err, &e) || !e.Unreachable() || e.ServiceRefused() || !errors.Is(err, licensing.ErrNetwork) {
		t.Fatalf("the refusal: %+v", e)
	}
	_, err = c.Validate(ctx, licensing.ValidateRequest{MachineID: "PC-1"})
	code(t, err, licensing.CodeNetwork)
	_, err = c.Keys(ctx, true)
	code(t, err, licensing.CodeNetwork)
}

// A service that does not answer is a network refusal within the timeout, never a hang: the client's own timeout,
// and NewHTTPClient's.
func TestSilentListenerIsNetworkWithinTheTimeout(t *testing.T) {
	url := silentListener(t)
	c := client(t, url, func(cfg *licensing.Config) { cfg.Timeout = 300 * time.Millisecond })
	start := time.Now()
	_, err := c.Validate(context.Background(), licensing.ValidateRequest{MachineID: "PC-1"})
	code(t, err, licensing.CodeNetwork)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the request took %v", took)
	}

	httpClient, err := licensing.NewHTTPClient(300*time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	c = client(t, url, func(cfg *licensing.Config) { cfg.HTTPClient = httpClient })
	start = time.Now()
	_, err = c.Keys(context.Background(), true)
	code(t, err, licensing.CodeNetwork)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the request took %v", took)
	}
}

// What sits between the application and the service when it is not reachable: a captive portal answering HTML, a
// proxy answering its own 502. Neither is the service's answer: unreachable, not a refusal.
func TestAnswersThatAreNotTheService(t *testing.T) {
	portal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("<html>Sign in to the hotel's Wi-Fi</html>"))
	}))
	defer portal.Close()
	_, err := client(t, portal.URL).Keys(context.Background(), true)
	code(t, err, licensing.CodeNetwork)

	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Bad Gateway", http.StatusBadGateway)
	}))
	defer proxy.Close()
	_, err = client(t, proxy.URL).Keys(context.Background(), true)
	var e *licensing.Error
	if !errors.As(err, &e) || !e.Unreachable() || e.ServiceRefused() || e.HTTPStatus != http.StatusBadGateway {
		t.Fatalf("HTTP 502 from a proxy: %+v", err)
	}
}

// vectorValidation is the shared vector validation-activated: the license key the service signed, its key set, and
// its machine, product and issue time.
type vectorValidation struct {
	licenseKey, jwks, machine, product string
	issuedAt                           time.Time
}

func loadVectorValidation(t *testing.T) vectorValidation {
	t.Helper()
	dir := filepath.Join("..", "..", "vectors")
	if d := os.Getenv("LICENSING_VECTORS"); d != "" {
		dir = d
	}
	answer, err := os.ReadFile(filepath.Join(dir, "validation", "activated.json"))
	if err != nil {
		t.Fatalf("the shared vectors are missing (clients/vectors, `npm run vectors`): %v", err)
	}
	var v struct {
		License struct {
			LicenseKey string `json:"licenseKey"`
		} `json:"license"`
	}
	if err := json.Unmarshal(answer, &v); err != nil || v.License.LicenseKey == "" {
		t.Fatalf("validation/activated.json: %v", err)
	}
	jwks, err := os.ReadFile(filepath.Join(dir, "jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := licensing.ParseJWKS(jwks)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(v.License.LicenseKey, ".")
	var claims struct {
		Iat float64 `json:"iat"`
	}
	if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || json.Unmarshal(payload, &claims) != nil {
		t.Fatalf("the vector's license key: %v", err)
	}
	iat := time.Unix(int64(claims.Iat), 0)
	verified, err := licensing.VerifyLicenseKey(v.License.LicenseKey, keys, licensing.VerifyOptions{Now: iat})
	if err != nil {
		t.Fatal(err)
	}
	return vectorValidation{v.License.LicenseKey, string(jwks), verified.MachineID, verified.ProductCode, verified.IssuedAt}
}

// Offline grace from what a validation kept (the state directory's documented files, written here from the shared
// vector validation-activated), with the service unreachable (a closed port).
func TestGraceOffline(t *testing.T) {
	v := loadVectorValidation(t)
	url := closedPort(t)
	ctx := context.Background()
	request := licensing.ValidateRequest{MachineID: v.machine}

	// state writes the kept validation and the key set into a new state directory.
	state := func(kept map[string]any) string {
		dir := t.TempDir()
		kept["v"] = 1
		data, _ := json.Marshal(kept)
		if err := os.WriteFile(filepath.Join(dir, licensing.ValidationFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, licensing.JWKSFile), []byte(v.jwks), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	grace := func(dir string, now time.Time, product string) *licensing.Grace {
		c := client(t, url, func(cfg *licensing.Config) { cfg.Now = func() time.Time { return now } })
		return &licensing.Grace{Client: c, Dir: dir, ProductCode: product}
	}
	kept := func() string { return state(map[string]any{"machineId": v.machine, "licenseKey": v.licenseKey}) }
	day := 24 * time.Hour

	dir := kept()
	r, err := grace(dir, v.issuedAt.Add(3*day), v.product).Validate(ctx, request)
	if err != nil || r.Online || r.Claims.MachineID != v.machine || !r.ValidatedAt.Equal(v.issuedAt) ||
		!r.GraceUntil.Equal(v.issuedAt.Add(7*day)) {
		t.Fatalf("offline within the grace: %+v %v", r, err)
	}
	code(t, r.Cause, licensing.CodeNetwork)
	// The latest time seen is kept: a clock set back before it is refused.
	_, err = grace(dir, v.issuedAt.Add(time.Hour), v.product).Validate(ctx, request)
	code(t, err, licensing.CodeClock)

	cases := []struct {
		name, dir, product, machine, want string
		now                               time.Time
	}{
		{"beyond the grace", kept(), v.product, v.machine, licensing.CodeGrace, v.issuedAt.Add(8 * day)},
		{"before the validation was signed", kept(), v.product, v.machine, licensing.CodeClock, v.issuedAt.Add(-time.Hour)},
		{"another machine", kept(), v.product, "PC-OTHER", licensing.CodeGrace, v.issuedAt.Add(day)},
		{"another product", kept(), "other-product", v.machine, licensing.CodeGrace, v.issuedAt.Add(day)},
		{"never validated", state(map[string]any{}), v.product, v.machine, licensing.CodeGrace, v.issuedAt.Add(day)},
		{"the kept key changed", state(map[string]any{"machineId": v.machine,
			"licenseKey": strings.Replace(v.licenseKey, ".ey", ".ez", 1)}), v.product, v.machine, licensing.CodeGrace, v.issuedAt.Add(day)},
		{"the service refused at the last validation", state(map[string]any{"machineId": v.machine,
			"refused": map[string]any{"message": "The license has been revoked", "reason": "licenseRevoked", "at": licensing.FormatTime(v.issuedAt)}}),
			v.product, v.machine, "licenseRevoked", v.issuedAt.Add(day)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := grace(c.dir, c.now, c.product).Validate(ctx, licensing.ValidateRequest{MachineID: c.machine})
			code(t, err, c.want)
		})
	}

	// A key set pinned in the application (TrustedKeys) is the one the kept validation must verify under.
	wrong, err := os.ReadFile(filepath.Join("..", "..", "vectors", "jwks-wrong-key.json"))
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := licensing.ParseJWKS(wrong)
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, url, func(cfg *licensing.Config) {
		cfg.TrustedKeys = pinned
		cfg.Now = func() time.Time { return v.issuedAt.Add(day) }
	})
	_, err = (&licensing.Grace{Client: c, Dir: kept(), ProductCode: v.product}).Validate(ctx, request)
	code(t, err, licensing.CodeGrace)
}

// Sessions wait in the state directory while the service cannot be reached (sent at a later start: the interop
// suite and the example send them to the real service).
func TestSessionsWaitWhileUnreachable(t *testing.T) {
	dir := t.TempDir()
	c := client(t, closedPort(t), func(cfg *licensing.Config) { cfg.InstallID = "install-1" })
	ctx := context.Background()
	opts := licensing.SessionOptions{Dir: dir, ProductCode: "studio", Version: "1.0.0", Platform: "win-x64", InstallID: "install-1"}
	first, err := c.TrackSession(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	n, err := first.End(ctx, licensing.SessionCrashed)
	if n != 0 {
		t.Fatalf("offline, %d sessions were sent", n)
	}
	code(t, err, licensing.CodeNetwork)
	second, err := c.TrackSession(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var kept []struct {
		ID, Status, Version, Platform string
		DurationMs                    *int64
	}
	data, err := os.ReadFile(filepath.Join(dir, licensing.SessionsFile))
	if err != nil || json.Unmarshal(data, &kept) != nil {
		t.Fatalf("%s: %v", licensing.SessionsFile, err)
	}
	if len(kept) != 2 || kept[0].ID != first.ID() || kept[0].Status != licensing.SessionCrashed || kept[0].DurationMs == nil ||
		kept[1].ID != second.ID() || kept[1].Status != licensing.SessionStarted || kept[1].Version != "1.0.0" || kept[1].Platform != "win-x64" {
		t.Fatalf("kept: %+v", kept)
	}
	_, err = second.End(ctx, "paused")
	code(t, err, licensing.CodeMalformed)
	_, err = client(t, closedPort(t)).SendSessions(ctx, licensing.SessionPing{ProductCode: "studio", Version: "1.0.0",
		Sessions: []licensing.Session{{ID: "s", Status: licensing.SessionStarted}}})
	code(t, err, licensing.CodeMalformed) // no install id
}
