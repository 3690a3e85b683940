package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// The interop program's cases that need no service: offline ones on the shared vectors (clients/vectors), the
// service unreachable, and misuse. `npm run interop` runs every case against the real service.

type result struct {
	exit int
	out  map[string]any
}

func call(t *testing.T, args ...string) result {
	t.Helper()
	var stdout bytes.Buffer
	exit := interop(args, &stdout)
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%v printed no JSON object: %q", args, stdout.String())
	}
	return result{exit, out}
}

func refused(t *testing.T, r result, code string) {
	t.Helper()
	got, _ := r.out["error"].(map[string]any)
	if r.exit != 1 || got["code"] != code {
		t.Fatalf("expected the refusal %s, got exit %d %v", code, r.exit, r.out)
	}
}

// closedPort is a base URL where nothing listens.
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

func vectors(t *testing.T) string {
	if dir := os.Getenv("LICENSING_VECTORS"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "..", "vectors")
}

// stateWithKeys is a --state directory holding the vectors' key set, so that nothing is fetched.
func stateWithKeys(t *testing.T) string {
	t.Helper()
	jwks, err := os.ReadFile(filepath.Join(vectors(t), "jwks.json"))
	if err != nil {
		t.Fatalf("the shared vectors are missing (clients/vectors, `npm run vectors`): %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The offline cases on vectors (airgap-request-basic, license-file-encrypted, airgap-response-lrs2 and its typo),
// the service unreachable: the keys come from --state.
func TestOfflineCases(t *testing.T) {
	r := call(t, "airgap-request", "--user-key", "ABCDE-FGH1J-KMNPQ-RSTVW-XYZ01", "--machine", "LAB-PC-7",
		"--nonce", "00112233445566778899aabbccddeeff")
	if r.exit != 0 || r.out["nonce"] != "00112233445566778899aabbccddeeff" ||
		r.out["requestCode"] != "LRQ1-FCH7C-8HT64-P24TS-278H4-2GJ38-H2JTH-J790R-MMBAB-9N750-M9DA9-9N8NJ-Q5NC5-JPHG6-4H2R8-KD48X-24K21-88PN0-GSD6W-H2R8K-E48X2-4C1G6-4RK4C-HK6CT-38D9N-6RV3E-DSR70-WKJRB-1C9H6-6RV4C-HJPAS-K649Y-V45R9-9R" {
		t.Fatalf("airgap-request: %+v", r)
	}

	state := stateWithKeys(t)
	offline := []string{"--url", closedPort(t), "--state", state, "--product", "vector-studio"}
	file := filepath.Join(vectors(t), "license-file", "encrypted.lic")
	verify := append([]string{"verify-file", "--file", file, "--user-key", "B9V2J-YJ4K7-RV5BV-PYKJ7-1X9W9",
		"--now", "2026-11-29T07:19:03.118Z"}, offline...)
	r = call(t, append(verify, "--machine", "PC-VECTOR-1")...)
	if r.exit != 0 || r.out["licenseId"] != "lic506A04DE" || r.out["machineId"] != "PC-VECTOR-1" ||
		r.out["expiresAt"] != "2026-12-29T06:19:03.118Z" || r.out["encrypted"] != true {
		t.Fatalf("verify-file: %+v", r)
	}
	refused(t, call(t, append(verify, "--machine", "PC-OTHER")...), "decrypt")

	air := append([]string{"airgap-verify", "--machine", "PC-VECTOR-AIR", "--nonce", "00112233445566778899aabbccddeeff",
		"--now", "2026-11-29T07:19:03.146Z"}, offline...)
	r = call(t, append(air, "--file", filepath.Join(vectors(t), "airgap", "lrs2.txt"))...)
	if r.exit != 0 || r.out["licenseId"] != "lic506A04DE" || r.out["machineId"] != "PC-VECTOR-AIR" ||
		r.out["expiresAt"] != "2026-12-29T06:19:03.000Z" {
		t.Fatalf("airgap-verify: %+v", r)
	}
	refused(t, call(t, append(air, "--file", filepath.Join(vectors(t), "airgap", "lrs2-typo.txt"))...), "malformed")
}

// The service unreachable, and nothing kept: the network refusal.
func TestUnreachable(t *testing.T) {
	url := closedPort(t)
	refused(t, call(t, "validate", "--url", url, "--user-key", "k", "--machine", "m"), "network")
	refused(t, call(t, "activate", "--url", url, "--user-key", "k", "--machine", "m"), "network")
}

// Misuse exits 2, before any request.
func TestMisuse(t *testing.T) {
	url := closedPort(t)
	missing := filepath.Join(t.TempDir(), "missing")
	for _, misuse := range [][]string{
		{},
		{"no-such-case"},
		{"--url", url},
		{"activate", "--bogus", "1"},
		{"activate", "--url", url, "--user-key", "k", "--machine", "m", "extra"},
		{"activate", "--url", url},
		{"activate", "--machine", "m", "--user-key", "k"},
		{"session", "--url", url, "--product", "p", "--version", "1.0.0", "--machine", "m", "--status", "x"},
		{"validate", "--url", url, "--user-key", "k", "--machine", "m", "--now", "yesterday"},
		{"validate", "--url", url, "--user-key", "k", "--machine", "m", "--ca", missing},
		{"seat-heartbeat", "--url", url, "--user-key", "k", "--machine", "m", "--client", "c", "--state", t.TempDir()},
		{"verify-file", "--url", url, "--machine", "m", "--file", missing},
	} {
		if r := call(t, misuse...); r.exit != 2 {
			t.Fatalf("%v: exit %d %v", misuse, r.exit, r.out)
		}
	}
}
