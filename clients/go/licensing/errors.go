package licensing

import (
	"errors"
	"fmt"
)

// Refusal codes of CONTRACT section 14 for what the client itself refuses. When the service refuses an operation,
// Error.Code is the service's own reason instead (for example "licenseRevoked", "alreadyActivated",
// "seatsExhausted", "invalidUserKey"; docs/reference/licensing.md lists them).
const (
	// CodeSignature: a signature does not match its data, or is not a signature at all.
	CodeSignature = "signature"
	// CodeUnknownKey: no key of the JWKS has the id the signature names.
	CodeUnknownKey = "unknownKey"
	// CodeMalformed: a license key, license file, code or answer that cannot be read.
	CodeMalformed = "malformed"
	// CodeExpired: a license key, license file or the license itself has expired.
	CodeExpired = "expired"
	// CodeProduct: issued for another product than the application's.
	CodeProduct = "product"
	// CodeMachine: issued to another machine (or client), or naming none where its mode needs one.
	CodeMachine = "machine"
	// CodeNonce: does not echo the nonce of the request it claims to answer.
	CodeNonce = "nonce"
	// CodeClock: the computer's clock is earlier than an issue time or the last time seen: it was set back.
	CodeClock = "clock"
	// CodeDecrypt: an encrypted license file does not open (no user key, or made for another machine or license).
	CodeDecrypt = "decrypt"
	// CodeGrace: the service cannot be reached and the license cannot be used offline (grace ended, or never
	// validated on this machine).
	CodeGrace = "grace"
	// CodeNetwork: the service could not be reached, timed out, or answered with something that is not its answer
	// (a 5xx, a 429, a proxy's page).
	CodeNetwork = "network"
)

// Error is every error this package returns. Code is the refusal code: the service's `reason` when the service
// refused the operation, otherwise one of the Code constants. Use errors.As to read it:
//
//	var lerr *licensing.Error
//	if errors.As(err, &lerr) && lerr.Code == "alreadyActivated" { … }
//
// errors.Is(err, licensing.ErrNetwork) (and the other Err values) compares codes only.
type Error struct {
	// Code is the refusal code (see the Code constants and the service's reasons).
	Code string
	// Message says what happened, for a person (the service's message when it refused).
	Message string
	// HTTPStatus is the status of the service's answer when it answered (0 otherwise).
	HTTPStatus int
	// Err is the underlying cause, if any (a net/http error, a JSON error…).
	Err error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "licensing: " + e.Code
	}
	return fmt.Sprintf("licensing: %s (%s)", e.Message, e.Code)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code and no message of its own (the Err values below), so
// errors.Is(err, licensing.ErrGrace) works through wrapping.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Unreachable reports whether the service was not reached: a network failure or timeout, an answer that is not
// the service's, or a 5xx or 429 without a licensing reason. Offline grace applies to these, not to refusals.
func (e *Error) Unreachable() bool {
	if e.Code == CodeNetwork {
		return true
	}
	plain := e.Code == fmt.Sprintf("http%d", e.HTTPStatus)
	licensing := e.HTTPStatus > 520 && e.HTTPStatus <= 536
	return plain && !licensing && (e.HTTPStatus >= 500 || e.HTTPStatus == 429)
}

// ServiceRefused reports whether the service itself refused the operation: a licensing refusal (Code is its
// reason, such as "licenseRevoked") or a refused credential (401). It is false for the client's own refusals, for
// an unreachable service, and for other answers ("http404"…).
func (e *Error) ServiceRefused() bool {
	if e.HTTPStatus == 0 || e.Unreachable() || isClientCode(e.Code) {
		return false
	}
	return e.Code != fmt.Sprintf("http%d", e.HTTPStatus) || e.HTTPStatus == 401 || e.HTTPStatus > 520 && e.HTTPStatus <= 536
}

// Values to compare with errors.Is.
var (
	ErrSignature  = &Error{Code: CodeSignature}
	ErrUnknownKey = &Error{Code: CodeUnknownKey}
	ErrMalformed  = &Error{Code: CodeMalformed}
	ErrExpired    = &Error{Code: CodeExpired}
	ErrProduct    = &Error{Code: CodeProduct}
	ErrMachine    = &Error{Code: CodeMachine}
	ErrNonce      = &Error{Code: CodeNonce}
	ErrClock      = &Error{Code: CodeClock}
	ErrDecrypt    = &Error{Code: CodeDecrypt}
	ErrGrace      = &Error{Code: CodeGrace}
	ErrNetwork    = &Error{Code: CodeNetwork}
)

func isClientCode(code string) bool {
	switch code {
	case CodeSignature, CodeUnknownKey, CodeMalformed, CodeExpired, CodeProduct, CodeMachine, CodeNonce, CodeClock,
		CodeDecrypt, CodeGrace, CodeNetwork:
		return true
	}
	return false
}

func refuse(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func refuseWith(code string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// CodeOf returns the refusal code of an error from this package ("" for nil, and for another error).
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
