package licensing

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The shared test vectors (clients/vectors, made by the service's own code: README.md there says every kind).

type vector struct {
	Name   string            `json:"name"`
	Kind   string            `json:"kind"`
	Files  map[string]string `json:"files"`
	Params map[string]string `json:"params"`
	Expect struct {
		OK     bool           `json:"ok"`
		Output map[string]any `json:"output"`
		Error  string         `json:"error"`
	} `json:"expect"`
}

func vectorsDir(t testing.TB) string {
	if dir := os.Getenv("LICENSING_VECTORS"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "vectors")
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(vectorsDir(t), "manifest.json"))
	if err != nil {
		t.Fatalf("the shared vectors are missing (clients/vectors/manifest.json, `npm run vectors`): %v", err)
	}
	var vectors []vector
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(vectors) == 0 {
		t.Fatal("manifest.json lists no vector")
	}
	return vectors
}

func (v vector) file(t testing.TB, role string) []byte {
	t.Helper()
	path, ok := v.Files[role]
	if !ok {
		t.Fatalf("%s: no %s file", v.Name, role)
	}
	data, err := os.ReadFile(filepath.Join(vectorsDir(t), path))
	if err != nil {
		t.Fatalf("%s: %v", v.Name, err)
	}
	return data
}

func (v vector) time(t testing.TB, param string) time.Time {
	s, ok := v.Params[param]
	if !ok {
		return time.Time{}
	}
	at, err := ParseTime(s)
	if err != nil {
		t.Fatalf("%s: params.%s: %v", v.Name, param, err)
	}
	return at
}

func optTime(p *time.Time) any {
	if p == nil {
		return nil
	}
	return FormatTime(*p)
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// runVector runs one vector's check with this client and returns what it reports (the README's output members).
// ok is false for a kind this client does not know.
func runVector(t testing.TB, v vector, replace map[string][]byte) (map[string]any, error, bool) {
	file := func(role string) []byte {
		if data, ok := replace[role]; ok {
			return data
		}
		return v.file(t, role)
	}
	jwks := func() *JWKS {
		keys, err := ParseJWKS(file("jwks"))
		if err != nil {
			t.Fatalf("%s: jwks: %v", v.Name, err)
		}
		return keys
	}
	p := v.Params
	switch v.Kind {
	case "jcs":
		out, err := Canonicalize(file("input"))
		if err != nil {
			return nil, refuseWith(CodeMalformed, err, "%v", err), true
		}
		return map[string]any{"canonical": string(out)}, nil, true
	case "validation":
		got, err := VerifyValidation(file("answer"), jwks(), VerifyOptions{
			Now: v.time(t, "now"), MachineID: p["machineId"], ProductCode: p["productCode"], Nonce: p["nonce"],
		})
		if err != nil {
			return nil, err, true
		}
		c := got.Claims
		return map[string]any{
			"valid": true, "licenseId": c.LicenseID, "productCode": orNil(c.ProductCode),
			"machineId": orNil(c.MachineID), "licensingMode": orNil(c.LicensingMode), "status": orNil(c.Status),
			"offlineGraceDays": c.OfflineGraceDays, "issuedAt": FormatTime(c.IssuedAt), "expiresAt": optTime(c.Expiry),
		}, nil, true
	case "update-check":
		got, err := VerifyUpdateCheck(file("answer"), jwks())
		if err != nil {
			return nil, err, true
		}
		return map[string]any{"available": got.Available, "version": orNil(got.Version), "required": got.Required,
			"rollback": got.Rollback}, nil, true
	case "license-file", "airgap-response":
		opts := FileOptions{
			JWKS: jwks(), MachineID: p["machineId"], ProductCode: p["productCode"], ClientID: p["clientId"],
			UserKey: p["userKey"], Nonce: p["nonce"], Now: v.time(t, "now"), LastSeen: v.time(t, "lastSeen"),
		}
		var got *LicenseFile
		var err error
		if v.Kind == "license-file" {
			got, err = VerifyLicenseFile(string(file("file")), opts)
		} else {
			var r *VerifiedResponse
			if r, err = VerifyActivationResponse(string(file("code")), opts); err == nil {
				got = r.LicenseFile
			}
		}
		if err != nil {
			return nil, err, true
		}
		return map[string]any{"licenseId": got.License.LicenseID, "machineId": got.MachineID,
			"productCode": got.Entitlements.ProductCode, "expiresAt": FormatTime(got.ExpiresAt),
			"encrypted": got.Encrypted}, nil, true
	case "airgap-request":
		r := OfflineRequest{UserKey: p["userKey"], MachineID: p["machineId"], ClientID: p["clientId"],
			Nonce: p["nonce"], ProductCode: p["productCode"]}
		code := EncodeRequestCode(r)
		_, payload, err := decodeCode(true, code)
		if err != nil {
			return nil, err, true
		}
		back, err := DecodeRequestCode(code)
		if err != nil || *back != r {
			t.Errorf("%s: the request code does not read back: %v %+v", v.Name, err, back)
		}
		return map[string]any{"requestCode": code, "json": string(payload)}, nil, true
	}
	return nil, nil, false
}

// sameValue compares an expected output member with the client's: instants as instants, numbers as numbers.
func sameValue(key string, want, got any) bool {
	if want == nil {
		return got == nil
	}
	if ws, ok := want.(string); ok {
		gs, ok := got.(string)
		if !ok {
			return false
		}
		if strings.HasSuffix(key, "At") {
			wt, err1 := ParseTime(ws)
			gt, err2 := ParseTime(gs)
			return err1 == nil && err2 == nil && wt.Equal(gt)
		}
		return ws == gs
	}
	if wf, ok := want.(float64); ok {
		switch g := got.(type) {
		case float64:
			return wf == g
		case int:
			return wf == float64(g)
		}
		return false
	}
	return reflect.DeepEqual(want, got)
}

func TestVectors(t *testing.T) {
	kinds := map[string]int{}
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			out, err, known := runVector(t, v, nil)
			if !known {
				t.Skipf("kind %q is not known to this client yet", v.Kind)
			}
			kinds[v.Kind]++
			if !v.Expect.OK {
				if err == nil {
					t.Fatalf("expected the refusal %q, got %v", v.Expect.Error, out)
				}
				if code := CodeOf(err); code != v.Expect.Error {
					t.Fatalf("expected the refusal %q, got %q: %v", v.Expect.Error, code, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("expected success, got %v", err)
			}
			for key, want := range v.Expect.Output {
				if !sameValue(key, want, out[key]) {
					t.Errorf("%s: expected %#v, got %#v", key, want, out[key])
				}
			}
		})
	}
	for _, kind := range []string{"jcs", "validation", "update-check", "license-file", "airgap-request", "airgap-response"} {
		if kinds[kind] == 0 {
			t.Errorf("no vector of kind %s ran", kind)
		}
	}
}

// flipped returns the text with the byte at i changed (its lowest bit flipped).
func flipped(data []byte, i int) []byte {
	out := append([]byte{}, data...)
	out[i] ^= 1
	return out
}

// segmentPositions: positions well inside each base64url segment of a compact JWS starting at offset (never a
// segment's last character, whose low bits may be padding that decodes to the same bytes).
func segmentPositions(jws string, offset int) []int {
	var out []int
	start := 0
	for _, segment := range strings.Split(jws, ".") {
		n := len(segment)
		for _, frac := range []int{1, 2, 3} {
			if n > 4 {
				out = append(out, offset+start+n*frac/4)
			}
		}
		start += n + 1
	}
	return out
}

// TestOneByteChanged: changing one byte of a signed vector that verifies makes it fail: a byte of a license key, a
// license file (its header, payload and signature), an update check's data or signature, or an LRS2 code's body or
// signature (with its checksum made right again, so the signature is what refuses it).
func TestOneByteChanged(t *testing.T) {
	tried := 0
	expectFailure := func(t *testing.T, v vector, role string, changed []byte, what string) {
		t.Helper()
		tried++
		if out, err, _ := runVector(t, v, map[string][]byte{role: changed}); err == nil {
			t.Errorf("%s: %s changed, and it still verifies: %v", v.Name, what, out)
		}
	}
	for _, v := range loadVectors(t) {
		if !v.Expect.OK {
			continue
		}
		switch v.Kind {
		case "validation":
			answer := v.file(t, "answer")
			var parsed struct {
				License struct {
					LicenseKey string `json:"licenseKey"`
				} `json:"license"`
			}
			if err := json.Unmarshal(answer, &parsed); err != nil || parsed.License.LicenseKey == "" {
				t.Fatalf("%s: no license key", v.Name)
			}
			at := bytes.Index(answer, []byte(parsed.License.LicenseKey))
			for _, i := range segmentPositions(parsed.License.LicenseKey, at) {
				expectFailure(t, v, "answer", flipped(answer, i), fmt.Sprintf("byte %d of the license key", i-at))
			}
		case "license-file":
			file := v.file(t, "file")
			text := strings.TrimSpace(string(file))
			at := bytes.Index(file, []byte(text))
			for _, i := range segmentPositions(text, at) {
				expectFailure(t, v, "file", flipped(file, i), fmt.Sprintf("byte %d of the file", i))
			}
		case "update-check":
			answer := v.file(t, "answer")
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(answer, &raw); err != nil {
				t.Fatal(err)
			}
			data := raw["data"]
			at := bytes.Index(answer, data)
			for i := 1; i < len(data)-1; i += max(1, len(data)/40) {
				expectFailure(t, v, "answer", flipped(answer, at+i), fmt.Sprintf("byte %d of data", i))
			}
			var signature string
			_ = json.Unmarshal(raw["signature"], &signature)
			sig, _ := decodeBase64(signature)
			for _, i := range []int{0, 17, 31, 32, 50, 63} {
				changed := append([]byte{}, sig...)
				changed[i] ^= 0x80
				text := bytes.Replace(answer, []byte(signature), []byte(base64Std(changed)), 1)
				expectFailure(t, v, "answer", text, fmt.Sprintf("byte %d of the signature", i))
			}
		case "airgap-response":
			code := strings.TrimSpace(string(v.file(t, "code")))
			read, err := ReadResponseCode(code)
			if err != nil {
				t.Fatal(err)
			}
			if read.Version == 1 {
				for _, i := range segmentPositions(read.LicenseFile, 0) {
					changed := EncodeResponseCodeV1(string(flipped([]byte(read.LicenseFile), i)))
					expectFailure(t, v, "code", []byte(changed), fmt.Sprintf("byte %d of the LRS1 file", i))
				}
				continue
			}
			payload := append(append([]byte{}, read.Signed[len(ResponseCodePrefix):]...), read.Signature...)
			for i := 0; i < len(payload); i++ {
				changed := encodeCode(ResponseCodePrefix, flipped(payload, i))
				expectFailure(t, v, "code", []byte(changed), fmt.Sprintf("byte %d of the LRS2 payload", i))
			}
			// And a character of the code as typed: the checksum catches it.
			expectFailure(t, v, "code", flipped([]byte(code), len(code)/2), "a character of the code")
		}
	}
	if tried == 0 {
		t.Fatal("no signed vector to change")
	}
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
