/*
 * licensing.h: the C client of the licensing service (CONTRACT section 14), for C and C++ applications and for FFI
 * from C#, Swift, Delphi and others. One header, a C ABI (no C++ types, no callbacks needed), built with CMake against
 * the system's OpenSSL, libcurl and jansson.
 *
 * Conventions
 *   - Every operation returns an int status: LICENSING_OK (0), or one of the licensing_status codes below.
 *   - Everything goes through an opaque handle, licensing_client *, made by licensing_client_new and freed by
 *     licensing_client_free. A handle is not thread-safe: use one per thread, or lock around it.
 *   - After a failed call, licensing_last_error(client) says why for a person and licensing_last_code(client) gives the
 *     refusal code of CONTRACT 14: the service's `reason` when it refused (`licenseExpired`, `wrongProduct`,
 *     `invalidUserKey`, `seatsExhausted`, `notActivated`, `licenseFileHeld` ... or `http<status>` when it gave none),
 *     else `signature`, `unknownKey`, `malformed`, `expired`, `product`, `machine`, `nonce`, `clock`, `decrypt`,
 *     `grace`, `network` (and `usage`, `memory`, `io` for a misuse, no memory, a file that cannot be read or written).
 *     Both strings belong to the handle and stay valid until its next call; after a success both are "".
 *   - Strings the library returns through `char **` are the caller's: free each with licensing_free(). Result structs
 *     returned through `T **` are freed with their own licensing_*_free(); NULL is accepted by every free function.
 *   - Times are int64_t milliseconds since 1970-01-01T00:00:00Z (UTC); 0 means "none" (no expiry, not stated).
 *   - Text is UTF-8, NUL-terminated. Optional `const char *` arguments may be NULL (or "").
 *   - Every request has a timeout (15 s by default, licensing_set_timeout_ms): a service that cannot be reached is the
 *     `network` refusal, never a hang.
 *
 * Quick start (see docs/clients/c.md):
 *
 *     licensing_client *c;
 *     licensing_client_new("https://licensing.example.com", &c);
 *     licensing_set_user_key(c, "XXXXX-XXXXX-XXXXX-XXXXX-XXXXX");
 *     licensing_set_product(c, "my-product");
 *     licensing_set_state_dir(c, "/home/me/.config/my-app/licensing");   // offline grace, keys, sessions
 *     licensing_validation *v;
 *     if (licensing_validate(c, machine_id, NULL, &v) == LICENSING_OK) { ...; licensing_validation_free(v); }
 *     else fprintf(stderr, "%s: %s\n", licensing_last_code(c), licensing_last_error(c));
 *     licensing_client_free(c);
 */
#ifndef LICENSING_H
#define LICENSING_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) || defined(__CYGWIN__)
#  if defined(LICENSING_BUILDING_SHARED)
#    define LICENSING_API __declspec(dllexport)
#  elif defined(LICENSING_SHARED)
#    define LICENSING_API __declspec(dllimport)
#  else
#    define LICENSING_API
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define LICENSING_API __attribute__((visibility("default")))
#else
#  define LICENSING_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define LICENSING_VERSION "1.0.0"

/** What an operation returns. The refusal code of CONTRACT 14 is licensing_last_code(). */
typedef enum licensing_status {
    LICENSING_OK = 0,
    /** The service refused (a licensing error, a refused credential, 4xx/5xx): licensing_last_code() is its reason. */
    LICENSING_REFUSED = 1,
    /** A signature does not verify (altered data, another key under the same kid, not 64 bytes r||s). */
    LICENSING_SIGNATURE = 2,
    /** No key of the JWK Set has the id the signature names. */
    LICENSING_UNKNOWN_KEY = 3,
    /** Not what it should be: not a JWS, not JSON, a code that does not read, an answer off the contract. */
    LICENSING_MALFORMED = 4,
    /** The license key, license file or code has expired, or the license itself has. */
    LICENSING_EXPIRED = 5,
    /** Issued for another product. */
    LICENSING_PRODUCT = 6,
    /** Issued for another machine (or client). */
    LICENSING_MACHINE = 7,
    /** Does not answer this request (another nonce). */
    LICENSING_NONCE = 8,
    /** The computer's clock was set back (before the issue time or the last time seen). */
    LICENSING_CLOCK = 9,
    /** An encrypted license file does not open (no user key, another machine or license). */
    LICENSING_DECRYPT = 10,
    /** The service cannot be reached and the offline grace does not cover now (ended, or never validated here). */
    LICENSING_GRACE = 11,
    /** The service cannot be reached (DNS, connection, TLS, timeout). */
    LICENSING_NETWORK = 12,
    /** A misuse: a required argument missing, no base URL, no user key (code `usage`). */
    LICENSING_INVALID_ARGUMENT = 13,
    /** Out of memory (code `memory`). */
    LICENSING_NO_MEMORY = 14,
    /** A file or the state directory cannot be read or written (code `io`). */
    LICENSING_IO = 15
} licensing_status;

/** The client: the service's address, the credential, options, the last error. Opaque. */
typedef struct licensing_client licensing_client;

/**
 * What a verified license key, license file or air-gap response code states. Strings are NULL when not stated.
 * Freed with licensing_license_free().
 */
typedef struct licensing_license {
    char *license_id;
    char *product_code;
    /** The machine (and client) it is bound to; NULL when it names none (a File-mode key). */
    char *machine_id;
    char *client_id;
    /** "File", "Activation" or "Floating". */
    char *licensing_mode;
    /** "Standard", "Demo" or "Trial". */
    char *license_type;
    char *edition;
    /** License keys: "Activated", "NotActivated" ... (the status signed). */
    char *status;
    /** The nonce it echoes (license keys, license files; for an LRS2 code the one checked). */
    char *nonce;
    /** The `kid` of the key that signed it. */
    char *key_id;
    char **features;
    size_t feature_count;
    /** When the service issued it: a license key's `iat`, a file's `issuedAt`. */
    int64_t issued_at;
    /** When it stops being valid: a key's `exp`, a file's `expiresAt` (a borrowed seat's file also ends with its
        borrow, `borrow.until` in payload_json); 0 = none. */
    int64_t expires_at;
    /** The license's own expiry; 0 = perpetual. */
    int64_t license_expire_at;
    /** The end of maintenance; 0 = none. */
    int64_t support_expire_at;
    /** Machines or seats the license allows (0 = unlimited); -1 when not stated (license keys). */
    int64_t max_clients;
    /** License keys: the days the license stays usable offline after this validation (Licensing:OfflineGraceDays). */
    int offline_grace_days;
    /** License files: 1 when it was encrypted (and opened with the user key and machine id). */
    int encrypted;
    /** 0 a license key (JWS), 1 a license file (JWS, or an LRS1 code), 2 an LRS2 response code. */
    int format;
    /** The verified (decrypted) payload as JSON text, for anything not listed here; NULL for an LRS2 code. */
    char *payload_json;
} licensing_license;

/**
 * The answer of licensing_validate(): online (the service answered and its signed license key verified), or offline
 * within the grace (the last signed validation kept in the state directory). Freed with licensing_validation_free().
 */
typedef struct licensing_validation {
    /** The verified license key: this machine's license, as the service signed it. */
    licensing_license *license;
    /** 1 when the service could not be reached and the kept validation was used. */
    int offline;
    /** When the validation used was signed (the key's `iat`). */
    int64_t validated_at;
    /** Until when the license stays usable offline from that validation; 0 = no grace. */
    int64_t grace_until;
    /** Online: the license token of this machine, when the service sent one. */
    char *license_token;
    /** Online: the service's answer, JSON text (its unsigned members are informative only). */
    char *answer_json;
} licensing_validation;

/**
 * The answer of activate, deactivate and the floating-seat calls. Which members are set depends on the call (see
 * each). Freed with licensing_grant_free().
 */
typedef struct licensing_grant {
    char *license_id;
    /** activate: the activation token (actk_...); seat request: the seat's token (fltk_...) to heartbeat and release. */
    char *license_token;
    /** When the token expires (0 = not stated). */
    int64_t token_expire_at;
    int active_client_count;
    int max_client_count;
    /** Seats: send a heartbeat at least this often (seconds). */
    int heartbeat_interval;
    /** The signed license key, when the answer carries one (verify it with licensing_verify_license_key()). */
    char *license_key;
    /** The service's answer, JSON text. */
    char *answer_json;
} licensing_grant;

/** A verified update check (GET /v1/updates/{productCode}). Freed with licensing_update_free(). */
typedef struct licensing_update {
    /** 1 when a newer release is offered (or a rollback). */
    int available;
    /** 1 when the caller may install it (licensed and within maintenance). */
    int installable;
    /** 1 when the caller's version is below the minimum or a newer critical release is offered. */
    int required;
    /** 1 when the offer is a rollback to an earlier release. */
    int rollback;
    /** The offered release's version; NULL without a release (nothing published, or 204). */
    char *version;
    char *current;
    char *latest;
    char *withheld_reason;
    char *rollback_reason;
    /** The download of the offered release (NULL when none). */
    char *download_url;
    char *file_name;
    char *sha256;
    char *sha512;
    int64_t size;
    /** The `kid` that signed it; NULL for a 204 (nothing installable: nothing signed). */
    char *key_id;
    /** The verified `data`, as its RFC 8785 canonical JSON (what was signed); NULL for a 204. */
    char *data_json;
} licensing_update;

/**
 * What an offline check is checked against. Zero it (`licensing_check chk = {0};`) and set what applies; NULL and 0
 * members take the client's settings or are not checked.
 */
typedef struct licensing_check {
    /** This machine (required for license files and response codes; license keys: checked when given). */
    const char *machine_id;
    /** This client on the machine, when the application uses one. */
    const char *client_id;
    /** The application's product; NULL: the client's (licensing_set_product), NULL there too: not checked. */
    const char *product_code;
    /** The license's user key (opens an encrypted license file); NULL: the client's. */
    const char *user_key;
    /** The nonce the answer must echo (required for air-gap responses). */
    const char *nonce;
    /** The time to check against (ms); 0: the client's clock. */
    int64_t now;
    /** The latest time the application has seen (ms): a clock earlier than it was set back (`clock`); 0: none. */
    int64_t last_seen;
} licensing_check;

/* ---- Library --------------------------------------------------------------------------------------------------- */

/** The library's version, e.g. "1.0.0". */
LICENSING_API const char *licensing_version(void);
/** The code of a status: "ok", "refused", "signature", "unknownKey", ... "network", "usage", "memory", "io". */
LICENSING_API const char *licensing_status_name(int status);
/** Frees a string (or buffer) the library returned. NULL is fine. */
LICENSING_API void licensing_free(void *p);

/* ---- The client ------------------------------------------------------------------------------------------------ */

/**
 * Makes a client of the service at `base_url` (e.g. "https://licensing.example.com"); NULL for a client that only
 * verifies offline (license files, codes, kept validations). `*out` is NULL on failure.
 */
LICENSING_API int licensing_client_new(const char *base_url, licensing_client **out);
/** Frees the client. NULL is fine. */
LICENSING_API void licensing_client_free(licensing_client *client);

/** Why the last call failed, for a person ("" after a success). Valid until the handle's next call. */
LICENSING_API const char *licensing_last_error(const licensing_client *client);
/** The refusal code of the last call (CONTRACT 14; "" after a success). Valid until the handle's next call. */
LICENSING_API const char *licensing_last_code(const licensing_client *client);
/** The HTTP status of the last answer the service gave (0 when none). */
LICENSING_API int licensing_last_http_status(const licensing_client *client);

/** The license's user key: the credential (the client signs in with it) and the default of every call. */
LICENSING_API int licensing_set_user_key(licensing_client *client, const char *user_key);
/** The application's product code: sent on activate/validate and checked in everything verified. */
LICENSING_API int licensing_set_product(licensing_client *client, const char *product_code);
/** The application's version: sent on activate and validate (release adoption). */
LICENSING_API int licensing_set_app_version(licensing_client *client, const char *version);
/**
 * A directory the client keeps its state in (made when missing): the last signed validation (offline grace), the
 * JWK Set (jwks.json), waiting session pings, the install id. NULL: none (no offline grace).
 */
LICENSING_API int licensing_set_state_dir(licensing_client *client, const char *directory);
/** A PEM file of certificates to trust for HTTPS besides the system's (a private CA, `npm run dev`'s). */
LICENSING_API int licensing_set_ca_file(licensing_client *client, const char *pem_path);
/** The timeout of every request, in milliseconds (default 15000; connecting at most 10000 of it). */
LICENSING_API int licensing_set_timeout_ms(licensing_client *client, long timeout_ms);
/** This installation's id, sent as X-Service-Install-Id (rollouts, adoption, session pings). */
LICENSING_API int licensing_set_install_id(licensing_client *client, const char *install_id);
/**
 * Pins the keys that verify everything (a JWK Set, JSON text as GET /v1/extensions/keys answers it), instead of the
 * kept or fetched ones: a server that is not the vendor's cannot then sign its own answers.
 */
LICENSING_API int licensing_set_trusted_keys(licensing_client *client, const char *jwks_json);
/** The clock the client believes (ms since the epoch), for tests and offline checks; 0: the computer's clock. */
LICENSING_API int licensing_set_clock(licensing_client *client, int64_t now_ms);

/* ---- Licensing operations (online) ----------------------------------------------------------------------------- */

/**
 * Activates the license on this machine (POST /v1/license/activate). Idempotent per machine and client. Fills
 * license_id, license_token, token_expire_at, the counts and license_key. `out` may be NULL.
 */
LICENSING_API int licensing_activate(licensing_client *client, const char *machine_id, const char *client_id,
                                     licensing_grant **out);
/** Frees this machine's activation (POST /v1/license/deactivate). Fills license_id and the counts. */
LICENSING_API int licensing_deactivate(licensing_client *client, const char *machine_id, const char *client_id,
                                       licensing_grant **out);
/**
 * Validates the license for this machine (POST /v1/license/validate, with a fresh nonce) and verifies the signed
 * license key of the answer against the JWK Set (pinned, kept in the state directory, or fetched): for this machine,
 * the product and the nonce. With a state directory the verified key is kept there, and when the service cannot be
 * reached the kept one is used within its grace (`offline` = 1); beyond it: LICENSING_GRACE. A refusal by the service
 * (revoked, expired, deactivated) is kept too and ends the grace.
 */
LICENSING_API int licensing_validate(licensing_client *client, const char *machine_id, const char *client_id,
                                     licensing_validation **out);

/**
 * Requests a floating seat (POST /v1/license/request). Fills license_id, license_token (keep it: heartbeat and release
 * take it), token_expire_at, heartbeat_interval and the counts. All seats taken: refused, `seatsExhausted`.
 */
LICENSING_API int licensing_seat_request(licensing_client *client, const char *machine_id, const char *client_id,
                                         licensing_grant **out);
/** Keeps a seat (POST /v1/license/heartbeat): fills token_expire_at, heartbeat_interval and the counts. */
LICENSING_API int licensing_seat_heartbeat(licensing_client *client, const char *license_token,
                                           licensing_grant **out);
/** Gives a seat back (POST /v1/license/release): fills license_id and the counts. */
LICENSING_API int licensing_seat_release(licensing_client *client, const char *license_token, licensing_grant **out);

/**
 * Checks out a license file for a machine (POST /v1/license/checkout), to run offline until its expiry; `encrypt`
 * seals it for that machine and user key. `*license_file` (licensing_free) is the file's text; `expires_at` may be NULL.
 */
LICENSING_API int licensing_checkout(licensing_client *client, const char *machine_id, const char *client_id,
                                     int encrypt, char **license_file, int64_t *expires_at);

/**
 * The service's JWK Set (GET /v1/extensions/keys) as JSON text, fetched once and cached (kept in the state directory
 * when there is one); `refresh` fetches again. `jwks_json` may be NULL (only caches).
 */
LICENSING_API int licensing_fetch_keys(licensing_client *client, int refresh, char **jwks_json);

/**
 * The signed update check (GET /v1/updates/{product}?platform=&version=[&channel=]): the signature verified (ES256
 * over the RFC 8785 canonical JSON of `data`) before anything is returned. Sends the user key and install id when
 * set. `channel` may be NULL. A refusal (expired license ...) is LICENSING_REFUSED with the service's reason.
 */
LICENSING_API int licensing_check_update(licensing_client *client, const char *version, const char *platform,
                                         const char *channel, licensing_update **out);

/*
 * ---- Verifying offline ----
 * No request, unless no key set is pinned or kept in the state directory (then the JWK Set is fetched once and kept),
 * or a license key or file names a kid the kept set lacks (a key rotation: fetched again when the service can be
 * reached; when it cannot, the refusal is unknownKey). With pinned keys nothing is ever fetched.
 */

/** Verifies a license file (its text: a compact JWS, or an LRS1/LRS2 code kept as the file) and opens it. */
LICENSING_API int licensing_verify_license_file(licensing_client *client, const char *license_file,
                                                const licensing_check *check, licensing_license **out);
/** Verifies a license key (license.licenseKey, a compact JWS) for the machine, product and nonce given. */
LICENSING_API int licensing_verify_license_key(licensing_client *client, const char *license_key,
                                               const licensing_check *check, licensing_license **out);
/** Verifies a kept validation answer (the JSON body of POST /v1/license/validate): its license key, as above. */
LICENSING_API int licensing_verify_validation_answer(licensing_client *client, const char *answer_json,
                                                     const licensing_check *check, licensing_license **out);
/** Verifies a kept update-check answer (its JSON body) as licensing_check_update() does. */
LICENSING_API int licensing_verify_update_answer(licensing_client *client, const char *answer_json,
                                                 licensing_update **out);

/* ---- Air-gapped activation ------------------------------------------------------------------------------------- */

/**
 * The request code (LRQ1-...) to show (and as a QR code) for a machine without a network: the person types it into
 * the service's /activate/ page on any connected device. `nonce` NULL: a fresh random one. `*nonce_out` (may be NULL)
 * is the nonce: keep it until the answer comes back. User key and product: the client's. Both freed with licensing_free.
 */
LICENSING_API int licensing_airgap_request(licensing_client *client, const char *machine_id, const char *client_id,
                                           const char *nonce, char **request_code, char **nonce_out);
/**
 * Verifies what the person brought back, offline: a response code (LRS2-..., or LRS1-...) or the downloaded license
 * file, for check->machine_id and check->nonce (both required). A mistyped code is LICENSING_MALFORMED.
 */
LICENSING_API int licensing_airgap_verify(licensing_client *client, const char *response,
                                          const licensing_check *check, licensing_license **out);

/* ---- Session pings (release health) ---------------------------------------------------------------------------- */

/**
 * Sends one session (POST /v1/updates/{product}/sessions): `status` "started", "exited", "crashed" or "abnormal";
 * `session_id` NULL: a fresh one; `started_at` 0: now; `duration_ms` < 0: none. Needs the product and install id.
 * `accepted` (may be NULL): how many the service took.
 */
LICENSING_API int licensing_send_session(licensing_client *client, const char *version, const char *platform,
                                         const char *session_id, const char *status, int64_t started_at,
                                         int64_t duration_ms, int *accepted);
/**
 * Starts this run's session (needs the state directory and the product): kept there as "started" and sent with the
 * sessions still waiting. Offline they wait for a later call; that is not an error. Without an install id set, one is
 * made and kept in the state directory.
 */
LICENSING_API int licensing_session_start(licensing_client *client, const char *version, const char *platform);
/**
 * Ends this run's session: "exited", "crashed" or "abnormal", written to the state directory at once (call it from
 * a crash handler too), then sent when `send_now` (a failure to send is not an error: it waits).
 */
LICENSING_API int licensing_session_end(licensing_client *client, const char *status, int send_now);
/**
 * Sends every waiting session now; `accepted` (may be NULL): how many the service took. The service not reached:
 * LICENSING_NETWORK (or LICENSING_REFUSED `http5xx` when it is down); the sessions keep waiting.
 */
LICENSING_API int licensing_sessions_flush(licensing_client *client, int *accepted);

/**
 * A stable id of this machine for activate/validate: the operating system's installation id (Linux machine-id, macOS
 * IOPlatformUUID, Windows MachineGuid) hashed with SHA-256 (with `salt`, your product code say: SHA-256 of
 * "<salt>:<id>", so other vendors' applications cannot correlate it), 64 hex characters, the same as the TypeScript
 * client's machineId(). LICENSING_IO when the system has no such id. Freed with licensing_free.
 */
LICENSING_API int licensing_machine_id(const char *salt, char **machine_id);
/** This installation's id, kept in the state directory (made once, random), as set by licensing_set_install_id. */
LICENSING_API int licensing_install_id(licensing_client *client, char **install_id);

/* ---- Utilities ------------------------------------------------------------------------------------------------- */

/**
 * The RFC 8785 canonical form (JCS) of a JSON text, what the service signs. `client` may be NULL (then no error
 * message is kept). A lone surrogate, or text that is not JSON: LICENSING_MALFORMED.
 */
LICENSING_API int licensing_canonicalize(licensing_client *client, const char *json, size_t length, char **canonical);
/**
 * Parses an ISO 8601 instant ("2026-01-01T00:00:00.000Z", an offset, or a date alone; without an offset: UTC) into ms
 * since the epoch: LICENSING_OK, or LICENSING_MALFORMED when it is not one.
 */
LICENSING_API int licensing_parse_time(const char *iso, int64_t *ms);
/** Writes ms since the epoch as ISO 8601 ("2026-01-01T00:00:00.000Z") into `buffer` (at least 32 bytes). */
LICENSING_API int licensing_format_time(int64_t ms, char *buffer, size_t size);

/* ---- Freeing results ------------------------------------------------------------------------------------------- */

LICENSING_API void licensing_license_free(licensing_license *license);
LICENSING_API void licensing_validation_free(licensing_validation *validation);
LICENSING_API void licensing_grant_free(licensing_grant *grant);
LICENSING_API void licensing_update_free(licensing_update *update);

#ifdef __cplusplus
}
#endif

#endif /* LICENSING_H */
