package licensing

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// obj reads a JSON object member by member without trusting it: each reader checks the type it promises, so a body
// that does not follow the contract becomes an error naming the field.
type obj struct {
	m    map[string]any
	what string
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("extra data after the JSON value")
	}
	return v, nil
}

func asObj(v any, what string) (obj, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, fmt.Errorf("%s is not an object", what)
	}
	return obj{m: m, what: what}, nil
}

func (o obj) has(key string) bool {
	v, ok := o.m[key]
	return ok && v != nil
}

func (o obj) sub(key string) (obj, error) { return asObj(o.m[key], o.what+"."+key) }

func (o obj) str(key string) (string, error) {
	s, ok := o.m[key].(string)
	if !ok {
		return "", fmt.Errorf("%s.%s is missing or not a string", o.what, key)
	}
	return s, nil
}

// optStr: null and "" (a protobuf default) read as absent.
func (o obj) optStr(key string) (string, error) {
	v := o.m[key]
	if v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s.%s is not a string", o.what, key)
	}
	return s, nil
}

func (o obj) optNum(key string) (float64, bool, error) {
	v := o.m[key]
	if v == nil {
		return 0, false, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false, fmt.Errorf("%s.%s is not a number", o.what, key)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, fmt.Errorf("%s.%s is not a number", o.what, key)
	}
	return f, true, nil
}

func (o obj) num(key string) (float64, error) {
	f, ok, err := o.optNum(key)
	if err == nil && !ok {
		err = fmt.Errorf("%s.%s is missing", o.what, key)
	}
	return f, err
}

func (o obj) optBool(key string) (bool, bool, error) {
	v := o.m[key]
	if v == nil {
		return false, false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, false, fmt.Errorf("%s.%s is not a boolean", o.what, key)
	}
	return b, true, nil
}

// strings: absent or null reads as empty.
func (o obj) strings(key string) ([]string, error) {
	v := o.m[key]
	if v == nil {
		return []string{}, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s.%s is not an array of strings", o.what, key)
	}
	out := make([]string, 0, len(arr))
	for _, item := range arr {
		s, ok := item.(string)
		if !ok {
			return nil, fmt.Errorf("%s.%s is not an array of strings", o.what, key)
		}
		out = append(out, s)
	}
	return out, nil
}

// optDate: an ISO 8601 date member; absent or null is the zero time.
func (o obj) optDate(key string) (*time.Time, error) {
	v := o.m[key]
	if v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%s.%s is not a date string", o.what, key)
	}
	t, err := ParseTime(s)
	if err != nil {
		return nil, fmt.Errorf("%s.%s is not an ISO 8601 date: %s", o.what, key, s)
	}
	return &t, nil
}

// enum reads an enumeration by name (any case) or by its number (the index), as REST may send either.
func (o obj) enum(key string, names []string) (string, error) {
	switch v := o.m[key].(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil && i >= 0 && int(i) < len(names) {
			return names[i], nil
		}
	case string:
		for _, n := range names {
			if strings.EqualFold(n, v) {
				return n, nil
			}
		}
	}
	return "", fmt.Errorf("%s.%s has an unknown value: %v", o.what, key, o.m[key])
}

// Names of the enumerations, in the order of their numbers (CONTRACT section 3).
var (
	LicensingModes  = []string{"File", "Activation", "Floating"}
	LicenseTypes    = []string{"Standard", "Demo", "Trial"}
	LicenseStatuses = []string{"Activated", "NotActivated", "Expired", "Revoked", "Tampered"}
)

// ParseTime reads an ISO 8601 instant as the service writes it (`2026-01-31T00:00:00.000Z`), or with an offset, or
// a date alone (read as UTC midnight).
func ParseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not an ISO 8601 instant: %q", s)
}

// FormatTime writes an instant as JavaScript's toISOString does (UTC, milliseconds): the form every client of the
// project prints, so their outputs compare as text.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

var base64Text = regexp.MustCompile(`^[A-Za-z0-9+/]*={0,2}$`)

// decodeBase64 reads standard or URL-safe base64, padded or not, ignoring white space (as the TypeScript client).
func decodeBase64(text string) ([]byte, bool) {
	normalized := strings.NewReplacer("-", "+", "_", "/").Replace(text)
	normalized = strings.Join(strings.Fields(normalized), "")
	if !base64Text.MatchString(normalized) {
		return nil, false
	}
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(normalized, "="))
	if err != nil {
		return nil, false
	}
	return b, true
}
