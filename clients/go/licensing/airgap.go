package licensing

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
)

// ActivationRequest is a request to show the person: the code, and the nonce to keep until the answer comes back.
type ActivationRequest struct {
	// RequestCode (LRQ1-…) is the code to type into the service's /activate/ page.
	RequestCode string
	// Nonce is what the response must name: keep it with the pending request.
	Nonce string
	// QRText is what a QR code of the request should hold: the code, or the activation page's address with the code
	// after "#" (a phone that scans it opens the page with the code filled in).
	QRText string
}

// NewNonce returns 16 random bytes as hex, the nonce the TypeScript client makes too.
func NewNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateActivationRequest makes the request code of air-gapped activation (offline: no request is sent). The nonce
// is r.Nonce, or a new random one. activationPage (optional) is the service's /activate/ page, for QRText.
func CreateActivationRequest(r OfflineRequest, activationPage string) ActivationRequest {
	if r.Nonce == "" {
		r.Nonce = NewNonce()
	}
	code := EncodeRequestCode(r)
	qr := code
	if activationPage != "" {
		if u, err := url.Parse(activationPage); err == nil {
			u.Fragment = ""
			qr = strings.TrimSuffix(u.String(), "#") + "#" + code
		}
	}
	return ActivationRequest{RequestCode: code, Nonce: r.Nonce, QRText: qr}
}

// VerifiedResponse is a verified answer of air-gapped activation, with what to save as the license file.
type VerifiedResponse struct {
	*LicenseFile
	// Saved is what to keep as the application's license file and verify at each start with VerifyLicenseFile:
	// the file's compact JWS, or the LRS2 code itself (upper case, in groups of five).
	Saved string
}

// VerifyActivationResponse verifies, offline, what the person brought back from the /activate/ page: a response
// code (LRS2 as the service issues it, or LRS1; mistyped: malformed) or the downloaded license file's text. The
// nonce is required (opts.Nonce), so a response to another request is refused (nonce). Other refusals are those of
// VerifyLicenseFile.
func VerifyActivationResponse(response string, opts FileOptions) (*VerifiedResponse, error) {
	if opts.Nonce == "" {
		return nil, refuse(CodeNonce, "the nonce of the request is required to verify its response")
	}
	text := strings.TrimSpace(response)
	saved := text
	if isCode(text) {
		read, err := ReadResponseCode(text)
		if err != nil {
			return nil, err
		}
		if read.Version == 1 {
			saved = read.LicenseFile
		} else {
			saved = read.Code
		}
	}
	file, err := VerifyLicenseFile(saved, opts)
	if err != nil {
		return nil, err
	}
	return &VerifiedResponse{LicenseFile: file, Saved: saved}, nil
}
