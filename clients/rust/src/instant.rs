//! Instants on the wire: ISO 8601 strings (`2026-01-01T00:00:00.000Z`, as JavaScript's `toISOString` writes them)
//! and Unix seconds (JWT `iat`/`exp`, the air-gap codes). Inside the crate an instant is milliseconds since the Unix
//! epoch; the public API speaks `std::time::SystemTime`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Milliseconds since the Unix epoch of a `SystemTime` (negative before 1970).
pub(crate) fn millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// The latest instant every platform's `SystemTime` holds that this crate uses: 9999-12-31T23:59:59Z.
const LATEST_SECS: u64 = 253_402_300_799;

/// The `SystemTime` of milliseconds since the Unix epoch, clamped to the years 0001-9999 (a signed claim of
/// `exp: 1e300` must not overflow a platform's `SystemTime`).
pub(crate) fn system_time(ms: i64) -> SystemTime {
    let limit = Duration::from_secs(LATEST_SECS);
    if ms >= 0 {
        UNIX_EPOCH + Duration::from_millis(ms as u64).min(limit)
    } else {
        let before = Duration::from_millis(ms.unsigned_abs()).min(Duration::from_secs(62_135_596_800));
        UNIX_EPOCH.checked_sub(before).unwrap_or(UNIX_EPOCH)
    }
}

/// Now, in milliseconds.
pub(crate) fn now_millis() -> i64 {
    millis(SystemTime::now())
}

/// Milliseconds of an ISO 8601 instant (RFC 3339: `2026-01-01T00:00:00Z`, `…00.000Z`, `…+02:00`; a date alone
/// is midnight UTC, as JavaScript reads it). `None` when the text is not one.
pub fn parse_iso(text: &str) -> Option<i64> {
    let text = text.trim();
    let parsed = OffsetDateTime::parse(text, &Rfc3339).ok().or_else(|| {
        if text.len() == 10 {
            OffsetDateTime::parse(&format!("{text}T00:00:00Z"), &Rfc3339).ok()
        } else {
            None
        }
    })?;
    i64::try_from(parsed.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The `SystemTime` of an ISO 8601 instant; `None` when the text is not one.
pub fn parse_system_time(text: &str) -> Option<SystemTime> {
    parse_iso(text).map(system_time)
}

/// An instant as JavaScript's `toISOString` writes it: `2026-01-31T00:00:00.000Z`.
pub fn format_iso(ms: i64) -> String {
    let Ok(t) = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000) else {
        return String::from("invalid");
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// A `SystemTime` as JavaScript's `toISOString` writes it.
pub fn format_system_time(t: SystemTime) -> String {
    format_iso(millis(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let ms = parse_iso("2026-01-31T00:00:00Z").unwrap();
        assert_eq!(ms, 1_769_817_600_000);
        assert_eq!(format_iso(ms), "2026-01-31T00:00:00.000Z");
        assert_eq!(parse_iso("2026-01-31T02:00:00.250+02:00"), Some(ms + 250));
        assert_eq!(parse_iso("2026-01-31"), Some(ms));
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(millis(system_time(-1500)), -1500);
    }
}
