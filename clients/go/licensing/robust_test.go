package licensing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bad input is refused with an *Error and a code, never a panic: truncations and garbage of every signed format.

func seedTexts(t testing.TB) []string {
	texts := []string{"", " ", "null", "{}", "[]", "a.b.c", "..", "LRS2-", "LRS1-00000", "LRQ1-", "LRS9-ABCDE",
		"lrs2-0000-0000", "eyJhbGciOiJFUzI1NiJ9.e30.", "eyJhbGciOiJub25lIn0.e30.", `{"data":{},"signature":1}`,
		`{"license":{"licenseKey":"x.y.z"}}`, "\x00\xff\xfe", strings.Repeat("A", 5000)}
	for _, v := range loadVectors(t) {
		for _, path := range v.Files {
			if data, err := os.ReadFile(filepath.Join(vectorsDir(t), path)); err == nil {
				text := string(data)
				texts = append(texts, text, text[:len(text)/2], text[:len(text)*9/10])
			}
		}
	}
	return texts
}

func checkRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && CodeOf(err) == "" {
		t.Errorf("%s: an error without a refusal code: %v", what, err)
	}
}

func allChecks(t *testing.T, text string, jwks *JWKS) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic on %q: %v", text[:min(len(text), 80)], r)
		}
	}()
	now := time.Date(2026, 11, 29, 7, 8, 32, 0, time.UTC)
	opts := FileOptions{JWKS: jwks, MachineID: "PC-VECTOR-1", UserKey: "8TBQ6-4N23T-EEKGS-W0N64-QHE7P", Now: now, Nonce: "n"}
	_, err := VerifyLicenseFile(text, opts)
	checkRefusal(t, "license file", err)
	_, err = VerifyActivationResponse(text, opts)
	checkRefusal(t, "response", err)
	_, err = ReadResponseCode(text)
	checkRefusal(t, "response code", err)
	_, err = DecodeRequestCode(text)
	checkRefusal(t, "request code", err)
	_, err = VerifyLicenseKey(text, jwks, VerifyOptions{Now: now})
	checkRefusal(t, "license key", err)
	_, err = VerifyValidation([]byte(text), jwks, VerifyOptions{Now: now})
	checkRefusal(t, "validation", err)
	_, err = VerifyUpdateCheck([]byte(text), jwks)
	checkRefusal(t, "update check", err)
	_, err = ParseJWKS([]byte(text))
	checkRefusal(t, "jwks", err)
	_, _ = Canonicalize([]byte(text))
	_, _ = DecodeCompactResponse([]byte(text))
}

func TestBadInputNeverPanics(t *testing.T) {
	jwks, err := LoadJWKS(filepath.Join(vectorsDir(t), "jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range seedTexts(t) {
		allChecks(t, text, jwks)
		allChecks(t, text, nil)
	}
}

// FuzzVerify runs every check on arbitrary text (`go test -fuzz FuzzVerify ./licensing`); `go test` runs the seeds.
func FuzzVerify(f *testing.F) {
	for _, text := range seedTexts(f) {
		f.Add(text)
	}
	jwks, err := LoadJWKS(filepath.Join(vectorsDir(f), "jwks.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) { allChecks(t, text, jwks) })
}

func TestCrockfordRoundTrip(t *testing.T) {
	for n := 0; n < 40; n++ {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*37 + n)
		}
		back, ok := base32Decode(base32Encode(data))
		if !ok || string(back) != string(data) {
			t.Fatalf("%d bytes do not round-trip", n)
		}
	}
	if _, ok := base32Decode("ABCU"); ok {
		t.Fatal("U is not Crockford base32")
	}
}

// The fixed vector of docs/reference/offline-codes.md.
func TestDocumentedLRS2Vector(t *testing.T) {
	jwks, err := ParseJWKS([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"qLdx9Cj8pfjoGdYqnlGle4gD9Wwbqc6fAqXmTDoCbNI","y":"4GHZokYPSUXdLqjfPRW0I7UBM7WuVfJLZjukwS40fS0","kid":"MpfYSV-oHS9wQozl8nNlvG5HPkqFwXWTnzS3aI4_qdE","alg":"ES256","use":"sig"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	code := "LRS2-053R2-ADJD5-AVJ03-9FN30-0ZMVS-3Y7JA-A4V0N-XG1P9-FW701-BTS8Z-BW6FB-R7YA0-20000-0006T-9Z9Y0-6PDQC-G0000-0001D-P6JRS-G84RM-4CJ36-D20CW-VMENJ-6JVR3-A1S6Y-0G6CN-W70VV-JEG27-6YBEC-F6X0J-Z3FC1-560DH-09N18-XN254-8C0FD-STRSR-KJDG8-DX1ZC-PSFX9-Z45EY-WVE32-C4MRA-D56EN-QQFNV-7G8WP-7T1YZ-NXKN6-5TCR7-T5TC9-N773J-XFTSG"
	r, err := VerifyActivationResponse(code, FileOptions{JWKS: jwks, MachineID: "LAB-PC-7", ClientID: "alice",
		Nonce: "00112233445566778899aabbccddeeff", Now: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if r.License.LicenseID != "lic0A1B2C3D" || r.Entitlements.ProductCode != "studio" || r.License.Edition != "Pro" ||
		strings.Join(r.License.Features, ",") != "export,sync" || r.Entitlements.MaxClients != 3 || r.ClientID != "alice" ||
		r.License.SupportExpireAt != nil || FormatTime(r.ExpiresAt) != "2026-01-31T00:00:00.000Z" {
		t.Fatalf("%+v %+v", r.License, r.Entitlements)
	}
	if r.Saved != code {
		t.Fatalf("saved %s", r.Saved)
	}
}
