package licensing

import (
	"context"
	"errors"
	"sync"
	"time"
)

// SeatOptions says how a held seat beats and reports.
type SeatOptions struct {
	// Interval between heartbeats (default: the heartbeatInterval the service answers, and follows it when a
	// heartbeat answers a new one; at least one second).
	Interval time.Duration
	// OnError is called when a heartbeat fails. terminal is true when the seat is lost (the service refused: the
	// token is unknown or expired, the license revoked…); the heartbeats have then stopped. Otherwise (network, 5xx)
	// the next heartbeat is tried as usual: one missed beat is harmless (a seat lives 2 x interval + 30 s).
	OnError func(err error, terminal bool)
	// OnBeat is called after each successful heartbeat.
	OnBeat func(*Beat)
}

// Seat is a floating seat this process holds: a goroutine sends heartbeats until Release (or until the service
// refuses one: Lost is closed then).
type Seat struct {
	client *Client
	grant  *FloatingGrant
	opts   SeatOptions

	mu       sync.Mutex
	interval time.Duration
	last     *Beat
	err      error
	stop     chan struct{}
	lost     chan struct{}
	done     chan struct{}
	released bool
	release  *Deactivation
	relErr   error
}

// HoldSeat takes a floating seat and keeps it with heartbeats until Release. All seats taken: the service's
// "seatsExhausted".
func (c *Client) HoldSeat(ctx context.Context, r FloatingRequest, opts SeatOptions) (*Seat, error) {
	if opts.Interval < 0 {
		return nil, refuse(CodeMalformed, "the heartbeat interval must be positive")
	}
	grant, err := c.RequestSeat(ctx, r)
	if err != nil {
		return nil, err
	}
	s := &Seat{client: c, grant: grant, opts: opts, interval: grant.HeartbeatInterval, stop: make(chan struct{}),
		lost: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s, nil
}

// Grant is the seat as the service granted it (its token, the license).
func (s *Seat) Grant() *FloatingGrant { return s.grant }

// Lost is closed when the service refused a heartbeat: the seat is gone.
func (s *Seat) Lost() <-chan struct{} { return s.lost }

// Err is the last heartbeat failure (nil after a success).
func (s *Seat) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// LastBeat is the last successful heartbeat's answer, if any.
func (s *Seat) LastBeat() *Beat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *Seat) next() time.Duration {
	if s.opts.Interval > 0 {
		return s.opts.Interval
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(time.Second, s.interval)
}

func (s *Seat) run() {
	defer close(s.done)
	timer := time.NewTimer(s.next())
	defer timer.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-timer.C:
		}
		if terminal := s.Beat(context.Background()); terminal {
			return
		}
		timer.Reset(s.next())
	}
}

// Beat sends one heartbeat now (the goroutine sends them on its own; this is for an application that wants to
// confirm the seat, e.g. after waking from sleep). It reports whether the seat is lost.
func (s *Seat) Beat(ctx context.Context) (terminal bool) {
	beat, err := s.client.Heartbeat(ctx, s.grant.LicenseToken)
	s.mu.Lock()
	if s.released {
		s.mu.Unlock()
		return true
	}
	if err != nil {
		var e *Error
		terminal = errors.As(err, &e) && e.ServiceRefused()
		s.err = err
		if terminal {
			select {
			case <-s.lost:
			default:
				close(s.lost)
			}
		}
		s.mu.Unlock()
		if s.opts.OnError != nil {
			s.opts.OnError(err, terminal)
		}
		return terminal
	}
	s.err, s.last = nil, beat
	if beat.HeartbeatInterval > 0 {
		s.interval = beat.HeartbeatInterval
	}
	s.mu.Unlock()
	if s.opts.OnBeat != nil {
		s.opts.OnBeat(beat)
	}
	return false
}

// Release stops the heartbeats and gives the seat back. Calling it again returns the same answer. A seat that was
// lost is still released on the service (in case only this process thought it lost); the service's refusal, such as
// "licenseTokenNotFound" for a reclaimed seat, is returned.
func (s *Seat) Release(ctx context.Context) (*Deactivation, error) {
	s.mu.Lock()
	if s.released {
		defer s.mu.Unlock()
		return s.release, s.relErr
	}
	s.released = true
	close(s.stop)
	s.mu.Unlock()
	<-s.done
	result, err := s.client.Release(ctx, s.grant.LicenseToken)
	s.mu.Lock()
	s.release, s.relErr = result, err
	s.mu.Unlock()
	return result, err
}
