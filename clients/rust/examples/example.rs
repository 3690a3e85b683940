//! A desktop application's licensing with licensing-client, against the real service: a session for release health,
//! activation, validation with offline grace, a license file verified offline, an air-gapped activation, a floating
//! seat, the signed update check and deactivation. docs/clients/rust.md walks through it.
//!
//! Its settings are environment variables; `npm run interop` (scripts/interop.mjs) sets them when it runs the
//! `example` of clients/interop.json against the service it started:
//!
//! ```text
//! LICENSING_URL           the licensing service
//! LICENSING_PRODUCT       the product code
//! LICENSING_USER_KEY      a node-locked (Activation) license's user key; it activates three machines: the one below,
//!                         <machine>-file (a license file) and <machine>-air (air-gapped), and frees the first
//! LICENSING_MACHINE       this machine's id (empty: machine_id(), this computer's, hashed with the product code)
//! LICENSING_FLOATING_KEY  a Floating license's user key
//! LICENSING_CA            a certificate to trust, a PEM file (`npm run dev`'s); empty: the public authorities only
//! LICENSING_STATE         the application's data directory, kept between runs (empty: a new temporary one)
//!
//! cargo run --locked --manifest-path clients/rust/Cargo.toml --example example
//! ```
//!
//! Each step prints what it did. Exit 0 when every step worked, 1 when one was refused or the service could not be
//! reached (its refusal code is printed), 2 when a setting is missing or unreadable.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use licensing_client::{
    create_activation_request, format_system_time, install_id, keep_keys, unreachable, verify_activation_response,
    verify_license_file, ActivateRequest, ActivationRequestInput, CheckoutRequest, Client, DeactivateRequest, Error,
    FileCheck, GraceOutcome, OfflineGrace, SeatEvent, SeatKeeper, SeatRequest, SessionOptions, SessionTracker,
    UpdateCheckRequest, ValidateRequest,
};

/// This application's version and platform (the interop suite publishes 1.0.0 and 2.0.0 for win-x64).
const VERSION: &str = "1.0.0";
const PLATFORM: &str = "win-x64";

/// What the application knows: the service, its product, the licenses' user keys, this machine, its data directory.
struct Settings {
    url: String,
    product: String,
    user_key: String,
    floating_key: String,
    machine: String,
    ca: Option<Vec<u8>>,
    state: PathBuf,
}

/// Why the example stopped: a setting (exit 2), or a refusal or failed step (exit 1).
enum Stop {
    Setting(String),
    Refused(Error),
    Failed(String),
}

impl From<Error> for Stop {
    fn from(error: Error) -> Self {
        Stop::Refused(error)
    }
}

fn settings() -> Result<Settings, Stop> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let required = [
        "LICENSING_URL",
        "LICENSING_PRODUCT",
        "LICENSING_USER_KEY",
        "LICENSING_FLOATING_KEY",
    ];
    let missing: Vec<&str> = required.into_iter().filter(|name| var(name).is_none()).collect();
    if !missing.is_empty() {
        return Err(Stop::Setting(format!(
            "{} must be set (see the top of examples/example.rs)",
            missing.join(", ")
        )));
    }
    let product = var("LICENSING_PRODUCT").unwrap_or_default();
    let machine = match var("LICENSING_MACHINE") {
        Some(machine) => machine,
        // This computer's id, hashed with the product's code so that it does not correlate across vendors.
        None => licensing_client::machine_id(&product)
            .map_err(|e| Stop::Setting(format!("LICENSING_MACHINE is empty and {e}")))?,
    };
    let ca = match var("LICENSING_CA") {
        Some(path) => Some(std::fs::read(&path).map_err(|e| Stop::Setting(format!("LICENSING_CA {path}: {e}")))?),
        None => None,
    };
    let state = var("LICENSING_STATE").map(PathBuf::from).unwrap_or_else(|| {
        std::env::temp_dir().join(format!("licensing-example-{}", licensing_client::random_nonce()))
    });
    Ok(Settings {
        url: var("LICENSING_URL").unwrap_or_default(),
        product,
        user_key: var("LICENSING_USER_KEY").unwrap_or_default(),
        floating_key: var("LICENSING_FLOATING_KEY").unwrap_or_default(),
        machine,
        ca,
        state,
    })
}

/// A client of the service for one license: its user key, a timeout on every request, the certificate to trust.
fn client_of(s: &Settings, user_key: &str, install: Option<&str>) -> Result<Client, Error> {
    let mut builder = Client::builder(s.url.as_str())
        .user_key(user_key)
        .timeout(Duration::from_secs(15));
    if let Some(pem) = &s.ca {
        builder = builder.ca_pem(pem.clone());
    }
    if let Some(install) = install {
        builder = builder.install_id(install);
    }
    builder.build()
}

fn run(s: &Settings) -> Result<(), Stop> {
    // This installation's random id, kept in the data directory. A malformed LICENSING_URL or LICENSING_CA is a
    // setting to fix.
    let install = install_id(&s.state)?;
    let client = client_of(s, &s.user_key, Some(&install)).map_err(|e| Stop::Setting(e.to_string()))?;

    // Release health: this run is a `started` session, kept in the data directory until the service takes it (an
    // application flushes it in the background; offline it waits for the next flush).
    let tracker = SessionTracker::start(
        &client,
        SessionOptions {
            product_code: s.product.clone(),
            version: VERSION.into(),
            platform: Some(PLATFORM.into()),
            install_id: install.clone(),
            directory: s.state.clone(),
        },
    )?;
    let crash = tracker.clone();
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = crash.crashed(); // written at once, sent at the next flush
        report(info);
    }));
    match tracker.flush() {
        Ok(sent) => println!("session {} started ({sent} sent)", tracker.session_id()),
        // Offline, the sessions wait in the directory for the next flush; the run goes on.
        Err(error) if unreachable(&error) => {
            println!("session {} started (waiting: {})", tracker.session_id(), error.code())
        }
        Err(error) => return Err(Stop::Refused(error)),
    }

    // 1. Activate this machine (a repeat returns the same activation; over the limit: alreadyActivated).
    let activated = client.activate(&ActivateRequest {
        machine_id: s.machine.clone(),
        client_name: Some("Example PC".into()),
        product_code: Some(s.product.clone()),
        ..Default::default()
    })?;
    let license_id = activated.license.license_id.clone();
    println!(
        "activated {license_id} on {} ({} of {} machines)",
        s.machine, activated.active_client_count, activated.max_client_count
    );

    // 2. Validate at each start: online, the signed answer is verified and kept in the state directory; while the
    //    service cannot be reached, it counts for the grace days signed into it. A refusal ends the grace at once.
    let grace = OfflineGrace::new(client.clone(), s.state.join("licensing")).product_code(s.product.as_str());
    let validate = ValidateRequest {
        machine_id: Some(s.machine.clone()),
        version: Some(VERSION.into()),
        ..Default::default()
    };
    match grace.validate(&validate) {
        Ok(GraceOutcome::Online {
            validation,
            grace_until,
        }) => println!(
            "validated online: {:?}, {} grace days, usable offline until {}",
            validation.status,
            validation.offline_grace_days,
            grace_until
                .map(format_system_time)
                .unwrap_or_else(|| "(no key kept)".into())
        ),
        Ok(GraceOutcome::Offline { grace_until, cause, .. }) => println!(
            "offline ({}): usable until {}",
            cause.code(),
            format_system_time(grace_until)
        ),
        // Offline beyond the grace (`grace`), a clock set back (`clock`), or the service's refusal.
        Err(error) => return Err(Stop::Refused(error)),
    }

    // 3. A license file, to run offline until it ends, for a second machine (a laptop that travels): checked out
    //    encrypted for it, saved, read back and verified with no network. A machine holding one cannot be freed.
    let laptop = format!("{}-file", s.machine);
    client.activate(&ActivateRequest {
        machine_id: laptop.clone(),
        client_name: Some("Example laptop".into()),
        product_code: Some(s.product.clone()),
        ..Default::default()
    })?;
    let keys = client.signing_keys(false)?; // ship them with the application, or keep them beside the file
    keep_keys(&s.state, &keys)?;
    let checked_out = client.checkout(&CheckoutRequest {
        machine_id: laptop.clone(),
        encrypt: true,
        ..Default::default()
    })?;
    let path = s.state.join(format!("{license_id}.lic"));
    write(&path, &checked_out.license_file)?;
    let file = verify_license_file(
        &read(&path)?,
        &keys,
        &FileCheck {
            machine_id: laptop.clone(),
            user_key: Some(s.user_key.clone()), // to open the encrypted file
            product_code: Some(s.product.clone()),
            ..Default::default()
        },
    )?;
    println!(
        "license file for {laptop} verified offline: {} until {}, features {:?}",
        file.license.license_id,
        format_system_time(file.expires_at),
        file.entitlements.features
    );
    match client.deactivate(&DeactivateRequest {
        machine_id: laptop.clone(),
        ..Default::default()
    }) {
        Err(error) if error.code() == "licenseFileHeld" => {
            println!(
                "{laptop} keeps its activation while it holds the file ({})",
                error.code()
            )
        }
        Err(error) => return Err(Stop::Refused(error)),
        Ok(_) => {
            return Err(Stop::Failed(format!(
                "{laptop} was deactivated although it holds a license file"
            )))
        }
    }

    // 4. Air-gapped activation of a third machine: show the request code (or its QR code); the person enters it on
    //    the service's /activate/ page from any connected device and brings back the response code.
    let air = format!("{}-air", s.machine);
    let request = create_activation_request(&ActivationRequestInput {
        user_key: s.user_key.clone(),
        machine_id: air.clone(),
        product_code: Some(s.product.clone()),
        activation_page_url: Some(format!("{}/activate/", client.base_url())),
        ..Default::default()
    });
    println!("request code {}", request.request_code);
    let typed = person_at_the_activation_page(s, client.base_url(), &request.request_code)?;
    let (answer, to_save) = verify_activation_response(
        &typed,
        &request.nonce,
        &keys,
        &FileCheck {
            machine_id: air.clone(),
            product_code: Some(s.product.clone()),
            ..Default::default()
        },
    )?;
    let air_path = s.state.join(format!("{}-air.lic", answer.license.license_id));
    write(&air_path, &to_save)?; // verify_license_file takes the saved code at each start
    verify_license_file(
        &read(&air_path)?,
        &keys,
        &FileCheck {
            machine_id: air.clone(),
            product_code: Some(s.product.clone()),
            ..Default::default()
        },
    )?;
    println!(
        "air-gapped activation of {air} verified: {} until {}, saved as {}",
        answer.license.license_id,
        format_system_time(answer.expires_at),
        air_path.file_name().unwrap_or_default().to_string_lossy()
    );

    // 5. A floating seat: a client per license (the floating license signs in with its own user key), the seat
    //    kept by a heartbeat thread until released.
    let desk = client_of(s, &s.floating_key, None)?;
    let seat = desk.request_seat(&SeatRequest {
        machine_id: s.machine.clone(),
        client_id: "example-user".into(),
        ..Default::default()
    })?;
    println!(
        "seat held ({} of {} in use), heartbeat every {} s",
        seat.active_client_count, seat.max_client_count, seat.heartbeat_interval
    );
    let keeper = SeatKeeper::start(&desk, &seat, |event| match event {
        SeatEvent::Heartbeat(beat) => println!(
            "heartbeat: {} of {} in use",
            beat.active_client_count, beat.max_client_count
        ),
        SeatEvent::Failed { error, terminal } => println!("heartbeat failed ({}), lost: {terminal}", error.code()),
    });
    let beat = desk.heartbeat(keeper.license_token())?; // what the thread sends every interval, once now
    println!(
        "heartbeat: seat kept until {}, next in {} s",
        beat.token_expire_at.map(format_system_time).unwrap_or_default(),
        beat.heartbeat_interval
    );
    let released = keeper.release()?;
    println!(
        "seat released ({} of {} in use)",
        released.active_client_count, released.max_client_count
    );

    // 6. The signed update check: the answer's signature is verified before anything in it is read.
    let update = client.check_for_update(&UpdateCheckRequest {
        product_code: s.product.clone(),
        version: VERSION.into(),
        platform: PLATFORM.into(),
        ..Default::default()
    })?;
    match (&update.version, &update.download) {
        (Some(version), Some(download)) if update.available => println!(
            "update {version} available{}: {} (sha512 {}…)",
            if update.required { " (required)" } else { "" },
            download.url,
            download.sha512.get(..16).unwrap_or(&download.sha512)
        ),
        _ => println!("no update (latest {})", update.latest.as_deref().unwrap_or("unknown")),
    }

    // 7. The session's end: recorded at a clean exit (Tauri: RunEvent::Exit) and sent.
    tracker.exited()?;
    let sent = tracker.flush()?;
    println!("session ended: exited ({sent} sent)");
    if sent != 1 {
        return Err(Stop::Failed(format!("the service took {sent} sessions, not 1")));
    }

    // 8. Deactivate this machine, which frees it for another; its next validation is refused, which also ends the
    //    offline grace.
    let freed = client.deactivate(&DeactivateRequest {
        machine_id: s.machine.clone(),
        ..Default::default()
    })?;
    println!(
        "deactivated {} ({} of {} machines)",
        s.machine, freed.active_client_count, freed.max_client_count
    );
    match grace.validate(&validate) {
        Err(error) if error.code() == "notActivated" => {
            println!("validation after deactivation refused: {}", error.code())
        }
        Err(error) => return Err(Stop::Refused(error)),
        Ok(_) => return Err(Stop::Failed("the validation after deactivation still passed".into())),
    }
    Ok(())
}

/// The person's part, played here with the route behind the service's /activate/ page (the anonymous
/// `POST /v1/license/offline-activation`): an application only shows the request code and reads the response code
/// the person types in.
fn person_at_the_activation_page(s: &Settings, base_url: &str, request_code: &str) -> Result<String, Stop> {
    let mut tls = ureq::tls::TlsConfig::builder();
    if let Some(pem) = &s.ca {
        let certs: Vec<_> = ureq::tls::parse_pem(pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(15)))
        .tls_config(tls.build())
        .build()
        .into();
    let url = format!("{base_url}/v1/license/offline-activation");
    let body = serde_json::json!({ "requestCode": request_code }).to_string();
    let unreachable = |e: ureq::Error| Stop::Refused(Error::Network(format!("{url}: {e}")));
    let mut page = agent
        .post(&url)
        .header("content-type", "application/json")
        .send(body)
        .map_err(unreachable)?;
    let status = page.status().as_u16();
    let text = page.body_mut().read_to_string().map_err(unreachable)?;
    let shown: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    match shown["responseCode"].as_str() {
        Some(code) if status == 200 => Ok(code.to_string()),
        // What the page would show the person: alreadyActivated when every machine of the license is in use…
        _ => Err(Stop::Failed(format!(
            "the activation page refused ({status}): {}",
            shown["reason"].as_str().unwrap_or(&text)
        ))),
    }
}

fn write(path: &Path, text: &str) -> Result<(), Stop> {
    std::fs::write(path, text).map_err(|e| Stop::Failed(format!("{}: {e}", path.display())))
}

fn read(path: &Path) -> Result<String, Stop> {
    std::fs::read_to_string(path).map_err(|e| Stop::Failed(format!("{}: {e}", path.display())))
}

fn main() -> ExitCode {
    let outcome = settings().and_then(|s| {
        std::fs::create_dir_all(&s.state).map_err(|e| Stop::Setting(format!("{}: {e}", s.state.display())))?;
        run(&s)
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Stop::Setting(message)) => {
            eprintln!("example: {message}");
            ExitCode::from(2)
        }
        Err(Stop::Refused(error)) => {
            eprintln!("refused: {}: {error}", error.code());
            ExitCode::from(1)
        }
        Err(Stop::Failed(message)) => {
            eprintln!("example: {message}");
            ExitCode::from(1)
        }
    }
}
