//! This computer's id: the operating system's own machine identifier (Linux `/etc/machine-id`, macOS
//! `IOPlatformUUID`, Windows `MachineGuid`), hashed with a salt of the vendor's choosing so that ids do not correlate
//! across vendors. The same value as the Python client's `machine_id(salt)`.

use std::process::Command;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

fn raw_machine_id() -> Option<String> {
    if cfg!(windows) {
        let out = command_output(
            "reg",
            &[
                "query",
                r"HKLM\SOFTWARE\Microsoft\Cryptography",
                "/v",
                "MachineGuid",
                "/reg:64",
            ],
        )?;
        return out
            .lines()
            .find(|l| l.trim_start().starts_with("MachineGuid"))
            .and_then(|l| l.split_whitespace().last())
            .map(String::from);
    }
    if cfg!(target_os = "macos") {
        if let Some(out) = command_output("ioreg", &["-rd1", "-c", "IOPlatformExpertDevice"]) {
            let found = out
                .lines()
                .find(|l| l.contains("\"IOPlatformUUID\""))
                .and_then(|l| l.split('"').nth(3));
            if let Some(uuid) = found {
                return Some(uuid.to_string());
            }
        }
    }
    ["/etc/machine-id", "/var/lib/dbus/machine-id", "/etc/hostid"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .map(|text| text.trim().to_string())
        .find(|text| !text.is_empty())
}

/// This computer's id, stable across runs and reinstalls: SHA-256 (hex) of the salt, a newline and the operating
/// system's machine identifier. Pass your product's name as `salt`. `malformed` when the system has none.
pub fn machine_id(salt: &str) -> Result<String> {
    let raw = raw_machine_id().ok_or_else(|| Error::malformed("This system has no machine identifier to read"))?;
    let digest = Sha256::digest(format!("{salt}\n{raw}").as_bytes());
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::machine_id;

    #[test]
    fn salted_and_stable() {
        // A system without a machine identifier (a bare container) has nothing to check.
        if let Ok(a) = machine_id("studio") {
            assert_eq!(a.len(), 64);
            assert_eq!(machine_id("studio").unwrap(), a);
            assert_ne!(machine_id("other").unwrap(), a);
        }
    }
}
