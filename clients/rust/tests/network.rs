//! Network failures, with real sockets on 127.0.0.1 and nothing of the service: a server that accepts and never
//! answers, one that answers every request with an HTML page (a captive portal's), and a port where nothing listens.
//! Each is the `network` refusal (never a hang, never a panic), a reason for offline grace (`unreachable`); the
//! service itself is exercised by `npm run interop` (scripts/interop.mjs), the example included.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use licensing_client::{
    install_id, unreachable, ActivateRequest, Client, OfflineGrace, SessionOptions, SessionTracker, UpdateCheckRequest,
    ValidateRequest, SESSIONS_FILE,
};

const USER_KEY: &str = "ABCDE-FGHJK-MNPQR-STVWX";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "licensing-client-rust-{name}-{}",
        licensing_client::random_nonce()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn validate_request() -> ValidateRequest {
    ValidateRequest {
        machine_id: Some("PC-1".into()),
        ..Default::default()
    }
}

/// A server that accepts connections, reads what comes, and never writes a byte.
fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut sink = [0u8; 4096];
                let mut stream = stream;
                // Until the client gives up and closes (a read of 0 bytes or an error).
                while matches!(std::io::Read::read(&mut stream, &mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    url
}

/// A server that answers every request, whatever its method and path, with the same HTML page.
fn portal_server() -> String {
    fn answer(stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0usize;
        let mut line = String::new();
        // The request line and headers, then the body, so that the client has sent everything before the answer.
        while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) && line != "\r\n" {
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            line.clear();
        }
        let mut body = vec![0; length];
        let _ = std::io::Read::read_exact(&mut reader, &mut body);
        let page = "<!doctype html><html><body><h1>Sign in to the Wi-Fi</h1></body></html>";
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    url
}

/// A base URL where nothing listens.
fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

#[test]
fn a_service_that_never_answers_is_network_within_the_timeout() {
    let client = Client::builder(silent_server())
        .user_key(USER_KEY)
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = client.validate(&validate_request()).unwrap_err();
    assert_eq!(error.code(), "network", "{error}");
    assert!(unreachable(&error));
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");

    // Through offline grace, with nothing kept: the cause is the network, the refusal `grace`; still within the timeout.
    let state = temp_dir("silent");
    let started = Instant::now();
    let error = OfflineGrace::new(client, &state)
        .validate(&validate_request())
        .unwrap_err();
    assert_eq!(error.code(), "grace", "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn a_captive_portal_page_is_network() {
    let url = portal_server();
    let client = Client::new(&url, USER_KEY).unwrap();
    // Signing in (the user key) meets the page first.
    let error = client.validate(&validate_request()).unwrap_err();
    assert_eq!(error.code(), "network", "{error}");
    assert!(unreachable(&error) && error.is_network());
    // An anonymous call (the keys) and a GET (the update check) likewise.
    let anonymous = Client::builder(&url).build().unwrap();
    assert_eq!(anonymous.signing_keys(true).unwrap_err().code(), "network");
    let update = client
        .check_for_update(&UpdateCheckRequest {
            product_code: "studio".into(),
            version: "1.0.0".into(),
            platform: "win-x64".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(update.code(), "network", "{update}");
}

#[test]
fn a_closed_port_is_network() {
    let url = closed_port();
    let client = Client::new(&url, USER_KEY).unwrap();
    let started = Instant::now();
    let error = client
        .activate(&ActivateRequest {
            machine_id: "PC-1".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(error.code(), "network", "{error}");
    assert!(unreachable(&error));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );

    // Sessions wait in the directory while the service cannot be reached: this run's start and its crash.
    let dir = temp_dir("sessions");
    let id = install_id(&dir).unwrap();
    assert_eq!(install_id(&dir).unwrap(), id, "the install id is kept");
    let tracker = SessionTracker::start(
        &client,
        SessionOptions {
            product_code: "studio".into(),
            version: "1.0.0".into(),
            platform: Some("win-x64".into()),
            install_id: id,
            directory: dir.clone(),
        },
    )
    .unwrap();
    assert_eq!(tracker.flush().unwrap_err().code(), "network");
    tracker.crashed().unwrap();
    assert_eq!(tracker.flush().unwrap_err().code(), "network");
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(SESSIONS_FILE)).unwrap()).unwrap();
    let kept = kept.as_array().expect("the sessions file is an array");
    assert_eq!(kept.len(), 1, "one session, its state replaced: {kept:?}");
    assert_eq!(kept[0]["id"], tracker.session_id());
    assert_eq!(kept[0]["status"], "crashed");
    let _ = std::fs::remove_dir_all(&dir);
}
