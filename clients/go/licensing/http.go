package licensing

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// DefaultTimeout bounds every request of a client made without an HTTP client of its own: connecting, the TLS
// handshake, waiting for the answer and reading it. A service that does not answer in time is a network refusal.
const DefaultTimeout = 30 * time.Second

// maxAnswerBytes bounds what the client reads of an answer.
const maxAnswerBytes = 16 << 20

// NewHTTPClient returns an *http.Client with a timeout on every phase of a request (total timeout; connect and TLS
// handshake at most 10 s each), trusting the system's certificate authorities plus those of the PEM file caFile when
// given (e.g. the certificate `npm run dev` serves with). The proxy settings of the environment apply.
func NewHTTPClient(timeout time.Duration, caFile string) (*http.Client, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	step := min(timeout, 10*time.Second)
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: step, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   step,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
		ForceAttemptHTTP2:     true,
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("licensing: reading the certificate %s: %w", caFile, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("licensing: %s holds no PEM certificate", caFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: transport, Timeout: timeout}, nil
}

// answer is a service's answer read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
	json   any // the parsed body when it is JSON
}

// do sends one request and reads its answer. A failure to reach the service, a timeout, or an answer cut short is a
// network *Error.
func (c *Client) do(ctx context.Context, method, path string, headers map[string]string, body any) (*answer, error) {
	url := c.baseURL + path
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, refuseWith(CodeMalformed, err, "the request cannot be written as JSON: %v", err)
		}
		reader = bytes.NewReader(data)
	}
	if _, has := ctx.Deadline(); !has && c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return nil, refuseWith(CodeMalformed, err, "the request to %s cannot be made: %v", url, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "licensing-go/"+Version)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, networkError(url, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
	if err != nil {
		return nil, refuseWith(CodeNetwork, err, "the answer from %s broke off: %v", url, err)
	}
	a := &answer{status: res.StatusCode, header: res.Header, body: data}
	if len(data) > 0 && strings.Contains(strings.ToLower(res.Header.Get("Content-Type")), "json") {
		if v, err := decodeJSON(data); err == nil {
			a.json = v
		} else if res.StatusCode >= 200 && res.StatusCode < 300 {
			// Not the service's answer (a proxy's or captive portal's page): as good as unreachable.
			return nil, refuseWith(CodeNetwork, err, "the answer from %s (HTTP %d) is not valid JSON", url, res.StatusCode)
		}
	}
	if res.StatusCode < 200 || res.StatusCode >= 300 {
		return nil, errorFromAnswer(url, a)
	}
	return a, nil
}

// object is the answer's JSON object, or an error saying the answer is not the service's.
func (a *answer) object(what string) (obj, error) {
	o, err := asObj(a.json, what)
	if err != nil {
		return o, refuse(CodeNetwork, "the answer to %s (HTTP %d) is not the service's JSON object", what, a.status)
	}
	if ok, has, _ := o.optBool("success"); has && !ok {
		return o, refuse(CodeMalformed, "%s answered success:false with a 2xx status", what)
	}
	return o, nil
}

func networkError(url string, err error) *Error {
	why := err.Error()
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		why = "no answer in time (timeout)"
	case errors.Is(err, context.Canceled):
		why = "the request was cancelled"
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		why += ": the service's certificate is not trusted; pass its CA certificate (NewHTTPClient's caFile, the interop program's --ca)"
	}
	return &Error{Code: CodeNetwork, Message: fmt.Sprintf("could not reach %s: %s", url, why), Err: err}
}

// errorFromAnswer maps a refusal: Code is the service's reason (body `reason`, else header X-Service-Reason) when it
// gave one, else "http<status>" (as the TypeScript interop program names it). A 5xx or 429 without a reason means the
// service (or what stands before it) is down or overloaded: Unreachable reports it, and offline grace applies.
func errorFromAnswer(url string, a *answer) *Error {
	message, reason := "", ""
	if o, err := asObj(a.json, "answer"); err == nil {
		message, _ = o.m["message"].(string)
		if message == "" {
			message, _ = o.m["title"].(string)
		}
		reason, _ = o.m["reason"].(string)
	}
	if reason == "" {
		reason = a.header.Get("X-Service-Reason")
	}
	if message == "" {
		message = fmt.Sprintf("%s answered HTTP %d %s", url, a.status, http.StatusText(a.status))
	}
	if reason == "" {
		reason = fmt.Sprintf("http%d", a.status)
	}
	return &Error{Code: reason, Message: message, HTTPStatus: a.status}
}
