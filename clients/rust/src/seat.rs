//! A floating seat kept alive by a background thread: a heartbeat every `heartbeat_interval` seconds (CONTRACT section
//! 4: a seat lives 2 x interval + 30 s after its last heartbeat) until [`SeatKeeper::release`]. One missed beat is
//! harmless, so a network failure only reports and tries again at the next beat; a licensing refusal (token unknown
//! or expired, license revoked) means the seat is gone, so the thread stops and the state is `Lost`.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::client::{is_licensing_status, Client, Counts, Heartbeat, Seat};
use crate::error::{Error, Result};

/// Where a kept seat stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeatState {
    /// Heartbeats run.
    Active,
    /// Given back.
    Released,
    /// The service no longer holds it (a heartbeat was refused).
    Lost,
}

/// What happens to a kept seat between calls.
#[derive(Debug)]
pub enum SeatEvent {
    /// A heartbeat succeeded.
    Heartbeat(Heartbeat),
    /// A heartbeat failed; `terminal` when the seat is lost (the thread has stopped).
    Failed {
        /// The failure.
        error: Error,
        /// Whether the seat is lost.
        terminal: bool,
    },
}

struct Shared {
    state: Mutex<(SeatState, u64)>,
    wake: Condvar,
}

/// A seat whose heartbeats run on a background thread. Dropping it stops the heartbeats without releasing the seat
/// (the service reclaims it after its lease); call [`SeatKeeper::release`] to give it back at once.
pub struct SeatKeeper {
    client: Client,
    token: String,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SeatKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeatKeeper")
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl SeatKeeper {
    /// Starts the heartbeats of a granted seat; `on_event` hears of each heartbeat and failure (it runs on the
    /// heartbeat thread: in Tauri, `app.emit(…)` from it to tell the window).
    pub fn start(client: &Client, seat: &Seat, on_event: impl FnMut(SeatEvent) + Send + 'static) -> SeatKeeper {
        let shared = Arc::new(Shared {
            state: Mutex::new((SeatState::Active, seat.heartbeat_interval.max(1))),
            wake: Condvar::new(),
        });
        let thread = {
            let client = client.clone();
            let token = seat.license_token.clone();
            let shared = Arc::clone(&shared);
            let mut on_event = on_event;
            std::thread::Builder::new()
                .name("licensing-seat".into())
                .spawn(move || loop {
                    {
                        let guard = shared.state.lock().unwrap_or_else(|e| e.into_inner());
                        // At most a day between beats, whatever an answer says: the wait must stay representable.
                        let interval = Duration::from_secs(guard.1.min(86_400));
                        let (guard, _) = shared
                            .wake
                            .wait_timeout_while(guard, interval, |s| s.0 == SeatState::Active)
                            .unwrap_or_else(|e| e.into_inner());
                        if guard.0 != SeatState::Active {
                            return;
                        }
                    }
                    match client.heartbeat(&token) {
                        Ok(beat) => {
                            let mut guard = shared.state.lock().unwrap_or_else(|e| e.into_inner());
                            if beat.heartbeat_interval > 0 {
                                guard.1 = beat.heartbeat_interval;
                            }
                            drop(guard);
                            on_event(SeatEvent::Heartbeat(beat));
                        }
                        Err(error) => {
                            let terminal =
                                matches!(error, Error::Refused { status, .. } if is_licensing_status(status));
                            let mut guard = shared.state.lock().unwrap_or_else(|e| e.into_inner());
                            if guard.0 != SeatState::Active {
                                return; // released while the heartbeat was in flight: not a loss
                            }
                            if terminal {
                                guard.0 = SeatState::Lost;
                            }
                            drop(guard);
                            on_event(SeatEvent::Failed { error, terminal });
                            if terminal {
                                return;
                            }
                        }
                    }
                })
                .ok()
        };
        SeatKeeper {
            client: client.clone(),
            token: seat.license_token.clone(),
            shared,
            thread,
        }
    }

    /// `Active`, `Released` or `Lost`.
    pub fn state(&self) -> SeatState {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The seat's token.
    pub fn license_token(&self) -> &str {
        &self.token
    }

    fn stop(&mut self, state: SeatState) {
        {
            let mut guard = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            if guard.0 == SeatState::Active {
                guard.0 = state;
            }
        }
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Stops the heartbeats and gives the seat back (`POST /v1/license/release`). A seat already lost is still
    /// released on the service, in case only this process thought it lost; the service's refusal (such as
    /// `licenseTokenNotFound` for a reclaimed seat) is returned.
    pub fn release(mut self) -> Result<Counts> {
        self.stop(SeatState::Released);
        self.client.release(&self.token)
    }
}

impl Drop for SeatKeeper {
    fn drop(&mut self) {
        self.stop(SeatState::Released);
    }
}
