/* What the library's source files share; not installed. */
#ifndef LICENSING_INTERNAL_H
#define LICENSING_INTERNAL_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "licensing.h"

#if defined(__GNUC__)
#  define LIC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#  define LIC_PRINTF(a, b)
#endif

#define LIC_DAY_MS INT64_C(86400000)
/** Seconds the clock may be behind the service's before it counts as set back. */
#define LIC_CLOCK_SKEW_MS INT64_C(300000)
#define LIC_DEFAULT_TIMEOUT_MS 15000L
/** Most bytes read of an answer. */
#define LIC_MAX_ANSWER (16u * 1024u * 1024u)

/* Files kept in the state directory. */
#define LIC_VALIDATION_FILE "licensing-validation.json"
#define LIC_JWKS_FILE "jwks.json"
#define LIC_SESSIONS_FILE "licensing-sessions.json"
#define LIC_INSTALL_ID_FILE "licensing-install-id"

struct licensing_client {
    char *base_url; /* without a trailing slash; NULL: offline only */
    char *user_key;
    char *product;
    char *app_version;
    char *state_dir;
    char *ca_file;
    char *install_id;
    long timeout_ms;
    int64_t clock_ms; /* 0: the computer's clock */

    json_t *trusted_keys; /* pinned JWK Set */
    json_t *keys;         /* kept or fetched JWK Set (cache) */
    int64_t keys_fetched_at; /* when `keys` came from the service (real clock, ms); 0: from the state directory */

    char *session_token; /* bearer token from the user key */
    int64_t session_renew_at;

    void *curl; /* CURL *, reused (keeps the connection) */

    /* The session of this run (licensing_session_start). */
    char *run_session_id;
    char *run_version;
    char *run_platform;
    int64_t run_started_at;

    /* The last error. */
    int status;
    char code[64];
    char *message;
    int http_status;
    /* Set by a failure that means the service was not reached (network, 5xx or 429 without a reason, an answer that
       is not the service's): offline grace applies. */
    int unreachable;
};

/* ---- errors (client.c) ---- */
int lic_fail(licensing_client *c, int status, const char *code, const char *fmt, ...) LIC_PRINTF(4, 5);
void lic_clear(licensing_client *c);
int lic_ok(licensing_client *c);

/* ---- util.c ---- */
char *lic_strdup(const char *s);
char *lic_strndup(const char *s, size_t n);
char *lic_sprintf(const char *fmt, ...) LIC_PRINTF(1, 2);
int lic_empty(const char *s);
int64_t lic_now_ms(const licensing_client *c);
int64_t lic_real_now_ms(void);
int lic_parse_iso(const char *text, int64_t *ms);
void lic_format_iso(int64_t ms, char out[32]);
/* base64: `url` 1 = base64url only (strict alphabet, no padding needed); 0 = standard or url, padding and whitespace
   allowed. Returns 0 and a malloc'd buffer, -1 when the text is not base64. */
int lic_b64_decode(const char *text, size_t len, int url_only, unsigned char **out, size_t *out_len);
char *lic_b64url_encode(const unsigned char *data, size_t len);
char *lic_hex(const unsigned char *data, size_t len);
int lic_random_hex(size_t bytes, char **out);
char *lic_uuid(void);
/* Files: whole reads and atomic writes. */
int lic_read_file(const char *path, char **text, size_t *len);
int lic_write_file_atomic(const char *path, const char *text, size_t len);
int lic_mkdirs(const char *dir);
char *lic_path_join(const char *dir, const char *name);
/* JSON helpers. */
json_t *lic_json_parse(const char *text, size_t len); /* NULL when not JSON */
char *lic_json_dump(const json_t *value);              /* compact, UTF-8 raw */
/* A member that is a non-empty string, else NULL (absent, null, "", another type). */
const char *lic_jstr(const json_t *o, const char *key);
/* 1 a string member, 0 absent/null/"", -1 another type. */
int lic_jopt_str(const json_t *o, const char *key, const char **out);
/* 1 a number, 0 absent/null, -1 another type. */
int lic_jopt_num(const json_t *o, const char *key, double *out);
/* 1 a boolean, 0 absent/null, -1 another type. */
int lic_jopt_bool(const json_t *o, const char *key, int *out);
/* ISO member: 1 a date, 0 absent/null, -1 not a date. */
int lic_jopt_date(const json_t *o, const char *key, int64_t *ms);
/* An array of strings (absent/null: empty). -1 when it is not one. */
int lic_jstrings(const json_t *o, const char *key, char ***items, size_t *count);
void lic_free_strings(char **items, size_t count);
/* JSON.stringify of a UTF-8 string appended to a buffer (RFC 8785 string form). -1: invalid UTF-8 / lone surrogate. */
typedef struct lic_buf {
    char *data;
    size_t len, cap;
    int failed;
} lic_buf;
void lic_buf_put(lic_buf *b, const char *s, size_t n);
void lic_buf_puts(lic_buf *b, const char *s);
int lic_buf_json_string(lic_buf *b, const char *s, size_t n);
char *lic_buf_take(lic_buf *b);
int lic_utf8_valid(const char *s, size_t n);

/* ---- jcs.c ---- */
/* RFC 8785: 0 and a malloc'd text, or -1 (a value JCS refuses: NaN, infinity, lone surrogate). */
int lic_jcs(const json_t *value, char **out, size_t *out_len);
int lic_format_number(double d, char out[40]);

/* ---- crypto.c ---- */
void lic_sha256(const void *data, size_t len, unsigned char out[32]);
/* 1 verifies, 0 does not (or the key is not a P-256 point), -1 internal failure. */
int lic_es256_verify(const unsigned char x[32], const unsigned char y[32], const unsigned char sig[64],
                     const void *msg, size_t msg_len);
int lic_hkdf_sha256(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len, const void *info,
                    size_t info_len, unsigned char *out, size_t out_len);
/* 0 opened (plain malloc'd, NUL-terminated), -1 not. ciphertext ends with the 16-byte tag. */
int lic_aes256gcm_open(const unsigned char key[32], const unsigned char *iv, size_t iv_len,
                       const unsigned char *ciphertext, size_t ct_len, unsigned char **plain, size_t *plain_len);

/* ---- keys (verify.c) ---- */
/* The ES256 keys of a JWK Set whose kid is `kid` (NULL: every one); fills up to `max` (x, y) pairs and kids. */
typedef struct lic_key {
    unsigned char x[32], y[32];
    const char *kid;
} lic_key;
size_t lic_keys_named(const json_t *jwks, const char *kid, lic_key *keys, size_t max);
/* The JWK Set to verify with: pinned, kept in the state directory, else fetched (when `may_fetch`). Borrowed. */
int lic_resolve_keys(licensing_client *c, int may_fetch, const json_t **jwks);
/* Again from the service when `kid` is unknown and the keys were not pinned (a key rotation). */
int lic_keys_for_kid(licensing_client *c, const char *kid, int may_fetch, const json_t **jwks);

/* ---- verify.c ---- */
typedef struct lic_params {
    const char *machine_id, *client_id, *product_code, *user_key, *nonce;
    int64_t now, last_seen;
} lic_params;
void lic_params_of(licensing_client *c, const licensing_check *check, lic_params *p);
int lic_verify_license_key(licensing_client *c, const char *jws, const json_t *jwks, const lic_params *p,
                           licensing_license **out);
int lic_verify_license_file(licensing_client *c, const char *text, const json_t *jwks, const lic_params *p,
                            licensing_license **out);
int lic_verify_update(licensing_client *c, const json_t *answer, const json_t *jwks, licensing_update **out);
int lic_verify_signed_file(licensing_client *c, const char *text, const json_t *jwks, const lic_params *p,
                           licensing_license **out);
int lic_in_force(licensing_client *c, const char *product_code, int64_t issued_at, int64_t ends_at,
                 int64_t license_expire_at, const lic_params *p);
char *lic_jws_kid(const char *jws); /* the header's kid, unverified; NULL when none */
int64_t lic_jws_iat_ms(const char *jws); /* the payload's iat (ms), unverified; -1 when none */
char *lic_compact_user_key(const char *typed);

/* ---- codes.c ---- */
uint32_t lic_crc32(const unsigned char *data, size_t len);
int lic_base32_decode(const char *text, size_t len, unsigned char **out, size_t *out_len);
char *lic_encode_code(const char *prefix, const unsigned char *payload, size_t len);
int lic_request_code(licensing_client *c, const char *user_key, const char *machine_id, const char *client_id,
                     const char *nonce, const char *product_code, char **code, char **json_text);
int lic_verify_response_code(licensing_client *c, const char *text, const json_t *jwks, const lic_params *p,
                             licensing_license **out);

/* ---- http.c ---- */
typedef struct lic_response {
    long status;
    char *body;
    size_t len;
    char *content_type;
    char *reason; /* X-Service-Reason */
    json_t *json; /* the parsed body, when JSON */
} lic_response;
void lic_response_free(lic_response *r);
/* One request; `headers` NULL-terminated "Name: value". LICENSING_NETWORK when the service was not reached. */
int lic_http(licensing_client *c, const char *method, const char *path, const char *const *headers,
             const char *body, lic_response *res);
void lic_http_cleanup(licensing_client *c);
char *lic_url_escape(licensing_client *c, const char *s);
/* A refusal from a non-2xx answer: LICENSING_REFUSED with its reason (or http<status>). */
int lic_refusal(licensing_client *c, const char *what, const lic_response *r);
/* A licensing call: POST `path` with the bearer token from the user key (signing in, renewing once on a 401). */
int lic_call(licensing_client *c, const char *path, json_t *body, const char *const *extra_headers,
             lic_response *res);

/* ---- grace.c ---- */
int lic_grace_validate(licensing_client *c, const char *machine_id, const char *client_id,
                       licensing_validation **out);
int lic_online_validate(licensing_client *c, const char *machine_id, const char *client_id,
                        licensing_validation **out);

#endif
