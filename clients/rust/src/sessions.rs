//! Release health from the application's side (CONTRACT section 13): a [`SessionTracker`] records this run of the
//! application as a session (started, then exited, crashed or abnormal) and sends the sessions to
//! `POST /v1/updates/{productCode}/sessions`, so the service can measure crash-free sessions per release, halt a
//! rollout whose release crashes, and roll back an install whose new version crashes on start.
//!
//! Sessions wait in a file of the directory given (`licensing-sessions.json`, the TypeScript package's format) until
//! the service has taken them ([`SessionTracker::flush`]): offline they wait, and a crash written as the process dies
//! is sent by the next run's flush.
//! Also [`install_id`]: this installation's random id (`licensing-install-id`).

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::grace::{unreachable, write_atomically};
use crate::instant::{format_iso, now_millis};

/// The file sessions wait in, inside the directory given.
pub const SESSIONS_FILE: &str = "licensing-sessions.json";
/// The file [`install_id`] keeps the id in.
pub const INSTALL_ID_FILE: &str = "licensing-install-id";
/// Most sessions kept while the service cannot be reached (the oldest are dropped first).
pub const MAX_KEPT_SESSIONS: usize = 500;
const BATCH: usize = 100;

/// The status of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Running.
    Started,
    /// Ended cleanly.
    Exited,
    /// Crashed.
    Crashed,
    /// Killed or hung.
    Abnormal,
}

impl SessionStatus {
    /// From its name (`started`, `exited`, `crashed`, `abnormal`).
    pub fn parse(name: &str) -> Option<SessionStatus> {
        match name {
            "started" => Some(SessionStatus::Started),
            "exited" => Some(SessionStatus::Exited),
            "crashed" => Some(SessionStatus::Crashed),
            "abnormal" => Some(SessionStatus::Abnormal),
            _ => None,
        }
    }
}

/// A session as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The session's random id.
    pub id: String,
    /// Its status.
    pub status: SessionStatus,
    /// When it started (ISO 8601).
    pub started_at: String,
    /// How long it ran, once ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// A session as kept: with the version (and platform) that ran it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeptSession {
    #[serde(flatten)]
    record: SessionRecord,
    version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    platform: Option<String>,
}

/// A random UUID (version 4) from the operating system's generator.
pub fn random_uuid() -> String {
    let mut b = [0u8; 16];
    if getrandom::getrandom(&mut b).is_err() {
        let hex = crate::airgap::random_nonce();
        for (i, byte) in b.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).unwrap_or(0);
        }
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn is_uuid(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
}

/// This installation's id for release rollouts and health (`X-Service-Install-Id`): a random UUID generated on first
/// use and kept in `directory`/licensing-install-id (Tauri: `app.path().app_data_dir()`). It identifies nothing
/// outside this service; a fresh data directory gets a new one.
pub fn install_id(directory: &Path) -> Result<String> {
    let file = directory.join(INSTALL_ID_FILE);
    let read = || {
        fs::read_to_string(&file)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| is_uuid(t))
    };
    if let Some(id) = read() {
        return Ok(id);
    }
    let fail = |e: std::io::Error| Error::malformed(format!("{} cannot be written: {e}", file.display()));
    fs::create_dir_all(directory).map_err(fail)?;
    let id = random_uuid();
    // Exclusive create: of two processes starting at once, one id wins and both return it.
    match fs::OpenOptions::new().write(true).create_new(true).open(&file) {
        Ok(mut f) => {
            use std::io::Write;
            f.write_all(format!("{id}\n").as_bytes()).map_err(fail)?;
            return Ok(id);
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(fail(e)),
    }
    if let Some(other) = read() {
        return Ok(other);
    }
    fs::write(&file, format!("{id}\n")).map_err(fail)?;
    Ok(id)
}

/// What a [`SessionTracker`] needs.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The product's code.
    pub product_code: String,
    /// The running version.
    pub version: String,
    /// The platform (`win-x64`, `darwin-arm64`, `linux-x64`…), when known.
    pub platform: Option<String>,
    /// This installation's id ([`install_id`]).
    pub install_id: String,
    /// Where sessions wait until sent.
    pub directory: PathBuf,
}

/// The session of this run: records it as started, sends waiting sessions, and records its end.
#[derive(Debug, Clone)]
pub struct SessionTracker {
    client: Client,
    options: SessionOptions,
    file: PathBuf,
    session: SessionRecord,
    started: Instant,
    ended: Arc<Mutex<bool>>,
}

fn waiting(file: &Path) -> Vec<KeptSession> {
    fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn write(file: &Path, sessions: &[KeptSession]) -> Result<()> {
    let text = serde_json::to_string(sessions).unwrap_or_else(|_| String::from("[]"));
    write_atomically(file, &text).map_err(|e| Error::malformed(format!("{} cannot be written: {e}", file.display())))
}

/// Writes `record` into `file` (replacing the same session's earlier state).
fn keep(file: &Path, record: KeptSession) -> Result<()> {
    let mut sessions: Vec<KeptSession> = waiting(file)
        .into_iter()
        .filter(|s| s.record.id != record.record.id)
        .collect();
    sessions.push(record);
    let skip = sessions.len().saturating_sub(MAX_KEPT_SESSIONS);
    write(file, &sessions[skip..])
}

impl SessionTracker {
    /// Starts this run's session: records it as `started` with what waits (earlier runs' ends included), which
    /// [`SessionTracker::flush`] sends. Makes no request: it fails only when the directory cannot be written.
    /// Call [`SessionTracker::exited`] at a clean end and [`SessionTracker::crashed`] from a panic hook; a run that
    /// ends with neither stays `started`, which the service counts as `abnormal` after 24 hours.
    pub fn start(client: &Client, options: SessionOptions) -> Result<SessionTracker> {
        let session = SessionRecord {
            id: random_uuid(),
            status: SessionStatus::Started,
            started_at: format_iso(now_millis()),
            duration_ms: None,
        };
        Self::record(client, options, session)
    }

    /// A tracker for a session given whole (its id, status and start), recorded and not yet sent.
    pub fn record(client: &Client, options: SessionOptions, session: SessionRecord) -> Result<SessionTracker> {
        fs::create_dir_all(&options.directory).map_err(|e| {
            Error::malformed(format!(
                "The directory {} cannot be written: {e}",
                options.directory.display()
            ))
        })?;
        let file = options.directory.join(SESSIONS_FILE);
        let tracker = SessionTracker {
            client: client.clone(),
            file,
            session,
            started: Instant::now(),
            ended: Arc::new(Mutex::new(false)),
            options,
        };
        keep(&tracker.file, tracker.kept(tracker.session.clone()))?;
        Ok(tracker)
    }

    fn kept(&self, record: SessionRecord) -> KeptSession {
        KeptSession {
            record,
            version: self.options.version.clone(),
            platform: self.options.platform.clone(),
        }
    }

    /// This run's session id.
    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    fn end(&self, status: SessionStatus) -> Result<()> {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        if *ended {
            return Ok(());
        }
        *ended = true;
        let duration = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        keep(
            &self.file,
            self.kept(SessionRecord {
                status,
                duration_ms: Some(duration),
                ..self.session.clone()
            }),
        )
    }

    /// Records a clean end of this run now (then [`SessionTracker::flush`] to send it, or the next run's flush does).
    pub fn exited(&self) -> Result<()> {
        self.end(SessionStatus::Exited)
    }

    /// Records this run as crashed now, synchronously, so it survives the process ending right after (call it from
    /// `std::panic::set_hook`).
    pub fn crashed(&self) -> Result<()> {
        self.end(SessionStatus::Crashed)
    }

    /// Records this run as abnormal (hung, killed by a watchdog).
    pub fn abnormal(&self) -> Result<()> {
        self.end(SessionStatus::Abnormal)
    }

    /// Sends every waiting session, in batches per version and platform: how many the service took. Those it took
    /// are no longer kept (but one still `started`, whose end comes later); a batch it refuses for good (4xx) is
    /// dropped; when it cannot be reached (or answers 5xx, 429), everything waits and the error is returned.
    pub fn flush(&self) -> Result<u64> {
        let mut taken = 0;
        let mut groups: BTreeMap<(String, String), Vec<KeptSession>> = BTreeMap::new();
        for s in waiting(&self.file) {
            groups
                .entry((s.version.clone(), s.platform.clone().unwrap_or_default()))
                .or_default()
                .push(s);
        }
        for ((version, platform), group) in groups {
            for batch in group.chunks(BATCH) {
                let records: Vec<SessionRecord> = batch.iter().map(|s| s.record.clone()).collect();
                let platform = (!platform.is_empty()).then_some(platform.as_str());
                match self.client.send_sessions(
                    &self.options.product_code,
                    &self.options.install_id,
                    &version,
                    platform,
                    &records,
                ) {
                    Ok(accepted) => taken += accepted,
                    Err(error) if unreachable(&error) => return Err(error),
                    Err(_) => {} // refused for good: sending it again would be refused again
                }
                let done: Vec<&str> = batch
                    .iter()
                    .filter(|s| s.record.status != SessionStatus::Started)
                    .map(|s| s.record.id.as_str())
                    .collect();
                let left: Vec<KeptSession> = waiting(&self.file)
                    .into_iter()
                    .filter(|s| !done.contains(&s.record.id.as_str()))
                    .collect();
                write(&self.file, &left)?;
            }
        }
        Ok(taken)
    }
}
