package licensing

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The air-gap codes (CONTRACT section 11; docs/reference/offline-codes.md byte by byte): a four-character prefix,
// then Crockford base32 of the payload followed by its CRC32 (big-endian), in groups of five joined by "-".
const (
	// RequestCodePrefix: a request code (the JSON {v:1,k,m,c?,n,p?}).
	RequestCodePrefix = "LRQ1"
	// ResponseCodePrefixV1: a response of the first version, the license file's compact JWS (still read).
	ResponseCodePrefixV1 = "LRS1"
	// ResponseCodePrefix: a response as the service issues it, the compact signed layout.
	ResponseCodePrefix = "LRS2"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var crockfordValue = func() [256]int8 {
	var v [256]int8
	for i := range v {
		v[i] = -1
	}
	for i := 0; i < len(crockford); i++ {
		v[crockford[i]] = int8(i)
		v[strings.ToLower(crockford[i : i+1])[0]] = int8(i)
	}
	for _, c := range "Ii" + "Ll" {
		v[c] = 1
	}
	v['O'], v['o'] = 0, 0
	return v
}()

// base32Encode is Crockford base32 (upper case, no padding; the last character padded with zero bits).
func base32Encode(data []byte) string {
	var out strings.Builder
	buffer, bits := 0, 0
	for _, b := range data {
		buffer = (buffer<<8 | int(b)) & 0xffff
		bits += 8
		for bits >= 5 {
			out.WriteByte(crockford[(buffer>>(bits-5))&31])
			bits -= 5
		}
	}
	if bits > 0 {
		out.WriteByte(crockford[(buffer<<(5-bits))&31])
	}
	return out.String()
}

// base32Decode reads Crockford base32 (any case; I and L as 1, O as 0); whole bytes only.
func base32Decode(text string) ([]byte, bool) {
	out := make([]byte, 0, len(text)*5/8)
	buffer, bits := 0, 0
	for i := 0; i < len(text); i++ {
		v := crockfordValue[text[i]]
		if v < 0 {
			return nil, false
		}
		buffer = (buffer<<5 | int(v)) & 0xffff
		bits += 5
		if bits >= 8 {
			out = append(out, byte(buffer>>(bits-8)))
			bits -= 8
		}
	}
	return out, true
}

func encodeCode(prefix string, payload []byte) string {
	framed := binary.BigEndian.AppendUint32(append([]byte{}, payload...), crc32.ChecksumIEEE(payload))
	text := base32Encode(framed)
	parts := []string{prefix}
	for len(text) > 5 {
		parts = append(parts, text[:5])
		text = text[5:]
	}
	if text != "" {
		parts = append(parts, text)
	}
	return strings.Join(parts, "-")
}

// codeError: a request or response code that cannot be read. problem is malformed, wrongKind, unknownVersion,
// checksum or content (as the TypeScript client's OfflineCodeError); as an *Error its Code is malformed.
func codeError(problem, format string, args ...any) *Error {
	return &Error{Code: CodeMalformed, Message: fmt.Sprintf(format, args...), Err: &CodeProblem{Problem: problem}}
}

// CodeProblem says why a code could not be read (the Err of a malformed *Error from the code readers).
type CodeProblem struct{ Problem string }

func (p *CodeProblem) Error() string { return "code problem: " + p.Problem }

var codeSeparators = regexp.MustCompile(`[\s-]+`)

// decodeCode returns the prefix and payload of a code of the expected kind, after its checksum matched.
func decodeCode(request bool, code string) (string, []byte, error) {
	name, expected, accepted := "response code", ResponseCodePrefix, []string{ResponseCodePrefix, ResponseCodePrefixV1}
	if request {
		name, expected, accepted = "request code", RequestCodePrefix, []string{RequestCodePrefix}
	}
	compact := strings.ToUpper(codeSeparators.ReplaceAllString(code, ""))
	if compact == "" {
		return "", nil, codeError("malformed", "the %s is empty", name)
	}
	prefix := compact
	if len(prefix) > 4 {
		prefix = prefix[:4]
	}
	ok := false
	for _, a := range accepted {
		ok = ok || a == prefix
	}
	if !ok {
		switch {
		case prefix == RequestCodePrefix || prefix == ResponseCodePrefix || prefix == ResponseCodePrefixV1:
			other := "response code"
			if prefix == RequestCodePrefix {
				other = "request code"
			}
			return "", nil, codeError("wrongKind", "this is a %s (%s-…), not a %s (%s-…)", other, prefix, name, expected)
		case regexp.MustCompile(`^LR[QS]\d$`).MatchString(prefix):
			return "", nil, codeError("unknownVersion", "this %s is of version %s, which this version does not read (expected %s-…)", name, prefix[3:], expected)
		}
		return "", nil, codeError("malformed", "a %s starts with %s-", name, expected)
	}
	data, ok := base32Decode(compact[4:])
	if !ok {
		return "", nil, codeError("malformed", "the %s has characters that are not part of it (only digits and the letters A-Z except U)", name)
	}
	if len(data) <= 4 {
		return "", nil, codeError("checksum", "the %s is incomplete: part of it is missing", name)
	}
	payload := data[:len(data)-4]
	if binary.BigEndian.Uint32(data[len(data)-4:]) != crc32.ChecksumIEEE(payload) {
		return "", nil, codeError("checksum", "the %s's checksum does not match: a character was mistyped or part of the code is missing", name)
	}
	return prefix, payload, nil
}

// OfflineRequest is what a request code carries: the license, this machine, and a nonce the answer must echo.
type OfflineRequest struct {
	UserKey     string
	MachineID   string
	ClientID    string // optional
	Nonce       string
	ProductCode string // optional
}

// EncodeRequestCode returns the request code (LRQ1-…) of a request: the UTF-8 JSON
// {"v":1,"k":…,"m":…,"c":…,"n":…,"p":…} in this member order, c and p only when given.
func EncodeRequestCode(r OfflineRequest) string {
	var b bytes.Buffer
	member := func(name, value string) {
		b.WriteString(`,"` + name + `":`)
		enc, _ := json.Marshal(value)
		b.Write(enc)
	}
	b.WriteString(`{"v":1`)
	member("k", r.UserKey)
	member("m", r.MachineID)
	if r.ClientID != "" {
		member("c", r.ClientID)
	}
	member("n", r.Nonce)
	if r.ProductCode != "" {
		member("p", r.ProductCode)
	}
	b.WriteString("}")
	// JSON.stringify leaves <, > and & as they are; encoding/json escapes them: undo that so the bytes agree.
	text := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&", `\u2028`, "\u2028", `\u2029`, "\u2029").Replace(b.String())
	return encodeCode(RequestCodePrefix, []byte(text))
}

// DecodeRequestCode reads a request code; a malformed *Error when it is not one, mistyped or incomplete.
func DecodeRequestCode(code string) (*OfflineRequest, error) {
	_, payload, err := decodeCode(true, code)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(payload) {
		return nil, codeError("content", "the request code does not hold a request")
	}
	var raw map[string]any
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, codeError("content", "the request code does not hold a request")
	}
	text := func(key string) (string, bool) {
		s, ok := raw[key].(string)
		return s, ok && strings.TrimSpace(s) != ""
	}
	k, okK := text("k")
	m, okM := text("m")
	n, okN := text("n")
	if v, _ := raw["v"].(float64); v != 1 || !okK || !okM || !okN {
		return nil, codeError("content", "the request code does not hold a request (license, machine and nonce)")
	}
	r := &OfflineRequest{UserKey: k, MachineID: m, Nonce: n}
	for key, target := range map[string]*string{"c": &r.ClientID, "p": &r.ProductCode} {
		if _, present := raw[key]; present {
			s, ok := text(key)
			if !ok {
				return nil, codeError("content", "the request code's client or product is not text")
			}
			*target = s
		}
	}
	return r, nil
}

// EncodeResponseCodeV1 returns the LRS1 code of a license file (its compact JWS). The service issues LRS2 instead.
func EncodeResponseCodeV1(licenseFile string) string {
	return encodeCode(ResponseCodePrefixV1, []byte(strings.TrimSpace(licenseFile)))
}

// CompactResponse is what an LRS2 response code states, signed. Times are Unix seconds (0 = none); KeyID and the
// hashes are the first bytes of SHA-256 of the UTF-8 text.
type CompactResponse struct {
	KeyID                                [4]byte
	IssuedAt, ExpiresAt                  uint32
	Machine                              [8]byte
	Client                               *[8]byte
	Nonce                                [8]byte
	LicensingMode, LicenseType           uint8
	MaxClients                           uint32
	IssueDate, ExpireAt, SupportExpireAt uint32
	LicenseID, ProductCode, Edition      string
	Features                             []string
}

// ShortHash is the first n bytes of SHA-256 of the UTF-8 text: an LRS2 code's key id and its bindings.
func ShortHash(text string, n int) []byte {
	sum := sha256.Sum256([]byte(text))
	return sum[:n]
}

// DecodeCompactResponse reads an LRS2 body; a malformed *Error (problem content) when the bytes are not one.
func DecodeCompactResponse(body []byte) (*CompactResponse, error) {
	bad := codeError("content", "the response code does not hold a response")
	at := 0
	take := func(n int) ([]byte, bool) {
		if at+n > len(body) {
			return nil, false
		}
		at += n
		return body[at-n : at], true
	}
	var failed bool
	u8 := func() uint8 {
		b, ok := take(1)
		if !ok {
			failed = true
			return 0
		}
		return b[0]
	}
	u32 := func() uint32 {
		b, ok := take(4)
		if !ok {
			failed = true
			return 0
		}
		return binary.BigEndian.Uint32(b)
	}
	fixed := func(dst []byte) {
		b, ok := take(len(dst))
		if !ok {
			failed = true
			return
		}
		copy(dst, b)
	}
	str := func() string {
		n := u8()
		b, ok := take(int(n))
		if failed || !ok || !utf8.Valid(b) {
			failed = true
			return ""
		}
		return string(b)
	}
	r := &CompactResponse{}
	flags := u8()
	if flags&^1 != 0 {
		return nil, bad
	}
	fixed(r.KeyID[:])
	r.IssuedAt, r.ExpiresAt = u32(), u32()
	fixed(r.Machine[:])
	if flags&1 != 0 {
		var c [8]byte
		fixed(c[:])
		r.Client = &c
	}
	fixed(r.Nonce[:])
	r.LicensingMode, r.LicenseType = u8(), u8()
	r.MaxClients = u32()
	r.IssueDate, r.ExpireAt, r.SupportExpireAt = u32(), u32(), u32()
	r.LicenseID, r.ProductCode, r.Edition = str(), str(), str()
	count := int(u8())
	r.Features = []string{}
	for i := 0; i < count && !failed; i++ {
		r.Features = append(r.Features, str())
	}
	if failed || at != len(body) || int(r.LicensingMode) >= len(LicensingModes) || int(r.LicenseType) >= len(LicenseTypes) {
		return nil, bad
	}
	return r, nil
}

// ResponseCode is a response code read (its checksum matched; nothing verified yet): an LRS1 license file, or an
// LRS2 response with its signed bytes.
type ResponseCode struct {
	Version int // 1 or 2
	// LicenseFile: the compact JWS of an LRS1 code.
	LicenseFile string
	// Code: an LRS2 code as the service writes it (upper case, groups of five): what to save.
	Code     string
	Response *CompactResponse
	// Signed is what the signature covers (ASCII "LRS2" then the body); Signature is r||s.
	Signed, Signature []byte
}

var compactJWS = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`)

// ReadResponseCode reads a response code of either version; a malformed *Error when it is mistyped, incomplete, a
// request code, or holds no response.
func ReadResponseCode(code string) (*ResponseCode, error) {
	prefix, payload, err := decodeCode(false, code)
	if err != nil {
		return nil, err
	}
	if prefix == ResponseCodePrefix {
		if len(payload) <= 64 {
			return nil, codeError("content", "the response code does not hold a response")
		}
		body := payload[:len(payload)-64]
		response, err := DecodeCompactResponse(body)
		if err != nil {
			return nil, err
		}
		return &ResponseCode{
			Version:   2,
			Code:      encodeCode(prefix, payload),
			Response:  response,
			Signed:    append([]byte(ResponseCodePrefix), body...),
			Signature: append([]byte{}, payload[len(payload)-64:]...),
		}, nil
	}
	if !utf8.Valid(payload) || !compactJWS.MatchString(string(payload)) {
		return nil, codeError("content", "the response code does not hold a license file")
	}
	return &ResponseCode{Version: 1, LicenseFile: string(payload)}, nil
}

var codeLike = regexp.MustCompile(`^(?i)LR[A-Z]\d`)

// isCode reports whether a text is an air-gap code rather than a license file's JWS.
func isCode(text string) bool { return codeLike.MatchString(text) }
