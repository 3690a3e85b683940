package licensing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// UpdateCheckRequest: GET /v1/updates/{productCode}. Version is the caller's current major.minor.patch; Channel
// stable (the service's default) or insider. UserKey (sent as X-Service-User-Key) defaults to the client's; without
// one only ungated releases are offered. InstallID defaults to the client's.
type UpdateCheckRequest struct {
	ProductCode, Platform, Version, Channel, UserKey, InstallID string
}

// UpdateCheck is an update check whose signature verified. Data is the signed JSON as received: read any member of
// SPEC's update check data from it; the common ones are read for you.
type UpdateCheck struct {
	Data      json.RawMessage
	Signature string
	KeyID     string
	// Available is data.updateAvailable.
	Available bool
	// Installable is data.installable.
	Installable bool
	// Version is data.release.version ("" without a release); Latest is data.latest.
	Version, Latest string
	// Required: the caller must update. Rollback: the caller runs a halted release rolled back: Download is the
	// previous release, to install as a downgrade.
	Required, Rollback bool
	// WithheldReason says why an update is not offered for installation.
	WithheldReason string
	// Download is the artifact to install, when one is offered.
	Download *UpdateDownload
}

// UpdateDownload is the artifact an update check offers.
type UpdateDownload struct {
	FileName string `json:"fileName"`
	Kind     string `json:"kind"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	SHA512   string `json:"sha512"`
	URL      string `json:"url"`
}

// VerifyUpdateCheck verifies an update check answer (its JSON body) against a key set offline: data must be an
// object and signature and keyId strings (malformed), then the ES256 signature over the RFC 8785 canonical JSON of
// data as parsed (unknownKey, signature).
func VerifyUpdateCheck(answerJSON []byte, jwks *JWKS) (*UpdateCheck, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(answerJSON, &raw); err != nil {
		return nil, refuseWith(CodeMalformed, err, "the update check is not a JSON object")
	}
	text := func(key string) (string, bool) {
		var s *string
		if json.Unmarshal(raw[key], &s) != nil || s == nil {
			return "", false
		}
		return *s, true
	}
	signature, okSignature := text("signature")
	keyID, okKeyID := text("keyId")
	var data map[string]json.RawMessage
	if !okSignature || !okKeyID || json.Unmarshal(raw["data"], &data) != nil || data == nil {
		return nil, refuse(CodeMalformed, "the update check has no data object, signature or keyId")
	}
	if err := VerifyDataSignature(raw["data"], signature, keyID, jwks); err != nil {
		return nil, err
	}
	out := &UpdateCheck{Data: raw["data"], Signature: signature, KeyID: keyID}
	var d struct {
		UpdateAvailable bool                      `json:"updateAvailable"`
		Installable     bool                      `json:"installable"`
		Latest          string                    `json:"latest"`
		Required        bool                      `json:"required"`
		Rollback        bool                      `json:"rollback"`
		WithheldReason  string                    `json:"withheldReason"`
		Release         *struct{ Version string } `json:"release"`
		Download        *UpdateDownload           `json:"download"`
	}
	if err := json.Unmarshal(raw["data"], &d); err != nil {
		return nil, refuseWith(CodeMalformed, err, "the update check's data does not follow the contract: %v", err)
	}
	out.Available, out.Installable, out.Latest = d.UpdateAvailable, d.Installable, d.Latest
	out.Required, out.Rollback, out.WithheldReason, out.Download = d.Required, d.Rollback, d.WithheldReason, d.Download
	if d.Release != nil {
		out.Version = d.Release.Version
	}
	return out, nil
}

// CheckForUpdate asks for an update and verifies the answer's signature before returning it: ES256 over the RFC 8785
// canonical JSON of data, by the key keyId of Config.TrustedKeys or of GET /v1/extensions/keys (fetched again once
// when the key is unknown, for a rotation). A 204 answer (nothing installable) is an UpdateCheck with no Data.
func (c *Client) CheckForUpdate(ctx context.Context, r UpdateCheckRequest) (*UpdateCheck, error) {
	query := url.Values{"platform": {r.Platform}, "version": {r.Version}}
	if r.Channel != "" {
		query.Set("channel", r.Channel)
	}
	headers := map[string]string{}
	if userKey, _ := c.userKeyOf(r.UserKey); userKey != "" {
		// The header rather than the query parameter keeps the key out of access logs.
		headers["X-Service-User-Key"] = userKey
	}
	if install := firstNonEmpty(r.InstallID, c.installID); install != "" {
		headers["X-Service-Install-Id"] = install
	}
	a, err := c.do(ctx, http.MethodGet, "/v1/updates/"+url.PathEscape(r.ProductCode)+"?"+query.Encode(), headers, nil)
	if err != nil {
		return nil, err
	}
	if a.status == http.StatusNoContent {
		// Nothing installable and nothing signed (a service that answers the check like a feed).
		return &UpdateCheck{}, nil
	}
	keys := c.trusted
	if keys == nil {
		if keys, err = c.Keys(ctx, false); err != nil {
			return nil, err
		}
		var head struct {
			KeyID string `json:"keyId"`
		}
		if json.Unmarshal(a.body, &head) == nil && head.KeyID != "" {
			if _, known := keys.Key(head.KeyID); !known {
				if keys, err = c.Keys(ctx, true); err != nil {
					return nil, err
				}
			}
		}
	}
	return VerifyUpdateCheck(a.body, keys)
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
