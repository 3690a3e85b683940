package licensing

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// Session statuses (CONTRACT section 13).
const (
	SessionStarted  = "started"
	SessionExited   = "exited"
	SessionCrashed  = "crashed"
	SessionAbnormal = "abnormal"
)

// Session is one run of the application as the service counts it.
type Session struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	StartedAt  string `json:"startedAt"`
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// SessionPing: POST /v1/updates/{productCode}/sessions. InstallID (required) and UserKey default to the client's;
// with a user key the sessions count beyond the per-address limit.
type SessionPing struct {
	ProductCode, Version, Platform, InstallID, UserKey string
	Sessions                                           []Session
}

// maxSessionsPerPing is the service's limit of sessions in one request.
const maxSessionsPerPing = 100

// SendSessions sends sessions (1 to 100) and returns how many the service took.
func (c *Client) SendSessions(ctx context.Context, p SessionPing) (int, error) {
	install := firstNonEmpty(p.InstallID, c.installID)
	if install == "" {
		return 0, refuse(CodeMalformed, "an install id is required to send sessions")
	}
	if len(p.Sessions) == 0 || len(p.Sessions) > maxSessionsPerPing {
		return 0, refuse(CodeMalformed, "send 1 to %d sessions at once, not %d", maxSessionsPerPing, len(p.Sessions))
	}
	headers := map[string]string{"X-Service-Install-Id": install}
	if userKey := firstNonEmpty(p.UserKey, c.userKey); userKey != "" {
		headers["X-Service-User-Key"] = userKey
	}
	body := map[string]any{"version": p.Version, "sessions": p.Sessions}
	if p.Platform != "" {
		body["platform"] = p.Platform
	}
	a, err := c.do(ctx, http.MethodPost, "/v1/updates/"+url.PathEscape(p.ProductCode)+"/sessions", headers, body)
	if err != nil {
		return 0, err
	}
	o, err := a.object("sessions")
	if err != nil {
		return 0, err
	}
	accepted, err := o.num("accepted")
	if err != nil {
		return 0, malformedAnswer("sessions", err)
	}
	return int(accepted), nil
}

// keptSession is a session waiting in the state directory, with the version (and platform) that ran it.
type keptSession struct {
	Session
	Version  string `json:"version"`
	Platform string `json:"platform,omitempty"`
}

// maxKeptSessions: most sessions kept while the service cannot be reached (the oldest are dropped first).
const maxKeptSessions = 500

// SessionOptions says what a SessionTracker records and where the sessions wait.
type SessionOptions struct {
	// Dir is the state directory the sessions wait in until the service took them.
	Dir                                                string
	ProductCode, Version, Platform, InstallID, UserKey string
	// SessionID of this run (default: a new random id).
	SessionID string
}

// SessionTracker records this run of the application as a session (started, then exited, crashed or abnormal) and
// sends the sessions that wait, earlier runs' included. Offline they wait in Dir for the next Flush.
type SessionTracker struct {
	client  *Client
	opts    SessionOptions
	session keptSession
	started time.Time
	mu      sync.Mutex
	ended   bool
}

// TrackSession starts this run's session: records it as started in Dir and sends what waits. The error is only the
// state directory's; an unreachable service is not an error (sessions wait). A run that ends without End (killed,
// hung, power lost) stays started, which the service counts as abnormal after 24 hours.
func (c *Client) TrackSession(ctx context.Context, opts SessionOptions) (*SessionTracker, error) {
	if opts.SessionID == "" {
		opts.SessionID = NewNonce()
	}
	now := c.now()
	t := &SessionTracker{client: c, opts: opts, started: now, session: keptSession{
		Session: Session{ID: opts.SessionID, Status: SessionStarted, StartedAt: FormatTime(now)},
		Version: opts.Version, Platform: opts.Platform,
	}}
	if err := t.keep(t.session); err != nil {
		return nil, err
	}
	_, _ = t.Flush(ctx)
	return t, nil
}

// ID is this run's session id.
func (t *SessionTracker) ID() string { return t.session.ID }

// End records this run's end (exited, crashed or abnormal) and sends the waiting sessions; it returns how many the
// service took (the error: the state directory's, or why the service was not reached: they wait).
func (t *SessionTracker) End(ctx context.Context, status string) (int, error) {
	if status != SessionExited && status != SessionCrashed && status != SessionAbnormal {
		return 0, refuse(CodeMalformed, "a session ends exited, crashed or abnormal, not %q", status)
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return t.Flush(ctx)
	}
	t.ended = true
	ms := t.client.now().Sub(t.started).Milliseconds()
	if ms < 0 {
		ms = 0
	}
	ended := t.session
	ended.Status, ended.DurationMs = status, &ms
	t.mu.Unlock()
	if err := t.keep(ended); err != nil {
		return 0, err
	}
	return t.Flush(ctx)
}

// Recover records a crash when the goroutine panics, then panics again: `defer tracker.Recover()` in main.
func (t *SessionTracker) Recover() {
	if r := recover(); r != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = t.End(ctx, SessionCrashed)
		cancel()
		panic(r)
	}
}

func (t *SessionTracker) file() string { return statePath(t.opts.Dir, SessionsFile) }

func (t *SessionTracker) waiting() []keptSession {
	var kept []keptSession
	if data, err := os.ReadFile(t.file()); err == nil {
		_ = json.Unmarshal(data, &kept)
	}
	return kept
}

func (t *SessionTracker) write(kept []keptSession) error {
	if kept == nil {
		kept = []keptSession{}
	}
	if len(kept) > maxKeptSessions {
		kept = kept[len(kept)-maxKeptSessions:]
	}
	data, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	return writeFileAtomic(t.file(), data)
}

// keep writes a session into the file, replacing the same session's earlier state.
func (t *SessionTracker) keep(s keptSession) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []keptSession
	for _, k := range t.waiting() {
		if k.ID != s.ID {
			out = append(out, k)
		}
	}
	if err := t.write(append(out, s)); err != nil {
		return fmt.Errorf("licensing: keeping sessions in %s: %w", t.opts.Dir, err)
	}
	return nil
}

// Flush sends every waiting session, one request per version and platform and batch of 100; those the service took
// (or refused for good, 4xx) are no longer kept, except this run's while it is still started.
func (t *SessionTracker) Flush(ctx context.Context) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	type group struct{ version, platform string }
	var order []group
	groups := map[group][]keptSession{}
	for _, s := range t.waiting() {
		g := group{s.Version, s.Platform}
		if _, seen := groups[g]; !seen {
			order = append(order, g)
		}
		groups[g] = append(groups[g], s)
	}
	taken := 0
	for _, g := range order {
		list := groups[g]
		for at := 0; at < len(list); at += maxSessionsPerPing {
			batch := list[at:min(at+maxSessionsPerPing, len(list))]
			sessions := make([]Session, len(batch))
			for i, s := range batch {
				sessions[i] = s.Session
			}
			n, err := t.client.SendSessions(ctx, SessionPing{
				ProductCode: t.opts.ProductCode, Version: g.version, Platform: g.platform,
				InstallID: t.opts.InstallID, UserKey: t.opts.UserKey, Sessions: sessions,
			})
			if err != nil {
				if e, ok := err.(*Error); ok && (e.Unreachable() || e.HTTPStatus == 0) {
					return taken, err // unreachable: everything waits
				}
			}
			taken += n
			done := map[string]bool{}
			for _, s := range batch {
				// A final status is sent once; an earlier run still started (killed, hung) too: the service counts it
				// as abnormal after 24 hours. This run's own start stays for its end.
				if s.Status != SessionStarted || s.ID != t.session.ID {
					done[s.ID] = true
				}
			}
			var rest []keptSession
			for _, s := range t.waiting() {
				if !done[s.ID] {
					rest = append(rest, s)
				}
			}
			if werr := t.write(rest); werr != nil {
				return taken, werr
			}
			if err != nil {
				return taken, err
			}
		}
	}
	return taken, nil
}
