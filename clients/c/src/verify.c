/*
 * Verifying what the service signed, offline: license keys (compact JWS, ES256), license files (a JWS, encrypted or
 * not) and update checks (ES256 over the RFC 8785 canonical JSON of `data`). The checks and their order are those of
 * clients/vectors/README.md (the TypeScript client's), each refusal with its CONTRACT 14 code.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const MODES[] = {"File", "Activation", "Floating"};
static const char *const TYPES[] = {"Standard", "Demo", "Trial"};
static const char *const STATUSES[] = {"Activated", "NotActivated", "Expired", "Revoked", "Tampered"};

static int same_ci(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

/* An enumeration by name (any case) or by its number: the canonical name, NULL when neither. */
static const char *enum_name(const json_t *v, const char *const *names, size_t count, int names_only) {
    if (json_is_string(v)) {
        for (size_t i = 0; i < count; i++)
            if (same_ci(json_string_value(v), names[i])) return names[i];
    } else if (!names_only && json_is_number(v)) {
        double d = json_number_value(v);
        if (d >= 0 && d < (double)count && d == floor(d)) return names[(size_t)d];
    }
    return NULL;
}

void lic_params_of(licensing_client *c, const licensing_check *check, lic_params *p) {
    memset(p, 0, sizeof *p);
    if (check) {
        p->machine_id = check->machine_id;
        p->client_id = lic_empty(check->client_id) ? NULL : check->client_id;
        p->product_code = check->product_code;
        p->user_key = check->user_key;
        p->nonce = lic_empty(check->nonce) ? NULL : check->nonce;
        p->now = check->now;
        p->last_seen = check->last_seen;
    }
    if (lic_empty(p->product_code)) p->product_code = c ? c->product : NULL;
    if (lic_empty(p->product_code)) p->product_code = NULL;
    if (lic_empty(p->user_key)) p->user_key = c ? c->user_key : NULL;
    if (p->now == 0) p->now = lic_now_ms(c);
}

char *lic_compact_user_key(const char *typed) {
    char *out = malloc(strlen(typed) + 1);
    if (!out) return NULL;
    size_t n = 0;
    for (const char *s = typed; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '-' || isspace(ch)) continue;
        ch = (unsigned char)toupper(ch);
        if (ch == 'I' || ch == 'L') ch = '1';
        if (ch == 'O') ch = '0';
        out[n++] = (char)ch;
    }
    out[n] = '\0';
    return out;
}

/* ---- Keys ---- */

static int decode_coordinate(const char *b64, unsigned char out[32]) {
    unsigned char *bytes;
    size_t n;
    if (!b64 || lic_b64_decode(b64, strlen(b64), 1, &bytes, &n) != 0) return -1;
    int ok = n == 32;
    if (ok) memcpy(out, bytes, 32);
    free(bytes);
    return ok ? 0 : -1;
}

size_t lic_keys_named(const json_t *jwks, const char *kid, lic_key *keys, size_t max) {
    json_t *list = json_object_get(jwks, "keys");
    size_t found = 0;
    for (size_t i = 0; json_is_array(list) && i < json_array_size(list) && found < max; i++) {
        json_t *k = json_array_get(list, i);
        const char *kty = lic_jstr(k, "kty"), *crv = lic_jstr(k, "crv"), *key_id = lic_jstr(k, "kid");
        const char *alg = lic_jstr(k, "alg"), *use = lic_jstr(k, "use");
        if (!kty || strcmp(kty, "EC") != 0 || !crv || strcmp(crv, "P-256") != 0) continue;
        if ((alg && strcmp(alg, "ES256") != 0) || (use && strcmp(use, "sig") != 0)) continue;
        if (kid && (!key_id || strcmp(kid, key_id) != 0)) continue;
        if (decode_coordinate(lic_jstr(k, "x"), keys[found].x) != 0) continue;
        if (decode_coordinate(lic_jstr(k, "y"), keys[found].y) != 0) continue;
        keys[found].kid = key_id;
        found++;
    }
    return found;
}

/* ---- Compact JWS ---- */

typedef struct jws {
    json_t *header;
    const char *kid, *typ;
    char *payload; /* decoded, NUL-terminated */
    size_t payload_len;
    char *signer_kid;
} jws;

static void jws_free(jws *j) {
    json_decref(j->header);
    free(j->payload);
    free(j->signer_kid);
    memset(j, 0, sizeof *j);
}

/* Reads and verifies a compact JWS: header (malformed), alg ES256 (malformed), the key of its kid (unknownKey), the
   signature (signature), the payload (malformed). `what` names it in messages. */
static int jws_verify(licensing_client *c, const char *text, const json_t *jwks, const char *what, jws *out) {
    memset(out, 0, sizeof *out);
    const char *start = text;
    while (isspace((unsigned char)*start)) start++;
    size_t len = strlen(start);
    while (len > 0 && isspace((unsigned char)start[len - 1])) len--;
    const char *dot1 = memchr(start, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - start)) : NULL;
    if (!dot1 || !dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - start)))
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The %s is not a compact JWS (three base64url parts)",
                        what);
    unsigned char *bytes = NULL;
    size_t n = 0;
    if (lic_b64_decode(start, (size_t)(dot1 - start), 1, &bytes, &n) != 0)
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The %s's header is not base64url", what);
    out->header = lic_json_parse((const char *)bytes, n);
    free(bytes);
    if (!json_is_object(out->header)) {
        jws_free(out);
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The %s's header is not a JSON object", what);
    }
    const char *alg = NULL;
    if (lic_jopt_str(out->header, "alg", &alg) != 1 || strcmp(alg, "ES256") != 0) {
        jws_free(out);
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The %s is not signed with ES256", what);
    }
    if (json_object_get(out->header, "crit")) {
        jws_free(out);
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The %s names critical extensions this client does not know",
                        what);
    }
    lic_jopt_str(out->header, "kid", &out->kid);
    lic_jopt_str(out->header, "typ", &out->typ);
    lic_key keys[8];
    size_t count = lic_keys_named(jwks, out->kid, keys, 8);
    if (count == 0) {
        int rc = lic_fail(c, LICENSING_UNKNOWN_KEY, "unknownKey",
                          "The %s is signed by a key this application does not know (kid %s is not in its JWK Set)",
                          what, out->kid ? out->kid : "(none)");
        jws_free(out);
        return rc;
    }
    const char *sig_text = dot2 + 1;
    size_t sig_len_text = len - (size_t)(sig_text - start);
    if (lic_b64_decode(sig_text, sig_len_text, 1, &bytes, &n) != 0) {
        jws_free(out);
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The %s's signature is not base64url", what);
    }
    int verified = 0;
    for (size_t i = 0; n == 64 && i < count && !verified; i++) {
        if (lic_es256_verify(keys[i].x, keys[i].y, bytes, start, (size_t)(dot2 - start)) == 1) {
            verified = 1;
            out->signer_kid = lic_strdup(keys[i].kid);
        }
    }
    free(bytes);
    if (!verified) {
        jws_free(out);
        return lic_fail(c, LICENSING_SIGNATURE, "signature", "The %s's signature does not verify: it was altered, or "
                        "signed by another key", what);
    }
    if (lic_b64_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), 1, &bytes, &n) != 0) {
        jws_free(out);
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The %s's payload is not base64url", what);
    }
    out->payload = lic_strndup((const char *)bytes, n);
    out->payload_len = n;
    free(bytes);
    if (!out->payload) {
        jws_free(out);
        return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    }
    return LICENSING_OK;
}

char *lic_jws_kid(const char *text) {
    const char *dot = strchr(text, '.');
    if (!dot) return NULL;
    unsigned char *bytes;
    size_t n;
    if (lic_b64_decode(text, (size_t)(dot - text), 1, &bytes, &n) != 0) return NULL;
    json_t *header = lic_json_parse((const char *)bytes, n);
    free(bytes);
    char *kid = lic_strdup(lic_jstr(header, "kid"));
    json_decref(header);
    return kid;
}

int64_t lic_jws_iat_ms(const char *text) {
    const char *dot1 = strchr(text, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2) return -1;
    unsigned char *bytes;
    size_t n;
    if (lic_b64_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), 1, &bytes, &n) != 0) return -1;
    json_t *payload = lic_json_parse((const char *)bytes, n);
    free(bytes);
    double iat = 0;
    int has = lic_jopt_num(payload, "iat", &iat);
    json_decref(payload);
    return has == 1 ? (int64_t)floor(iat * 1000) : -1;
}

static int dup_opt(char **dst, const char *src) {
    if (!src) return 0;
    *dst = lic_strdup(src);
    return *dst ? 0 : -1;
}

/* ---- License keys ---- */

int lic_verify_license_key(licensing_client *c, const char *text, const json_t *jwks, const lic_params *p,
                           licensing_license **out) {
    jws j;
    int rc = jws_verify(c, text, jwks, "license key", &j);
    if (rc != LICENSING_OK) return rc;
    json_t *claims = lic_json_parse(j.payload, j.payload_len);
    licensing_license *lic = NULL;
    const char *s = NULL;
#define MALFORMED(...)                                                                                               \
    do {                                                                                                             \
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", __VA_ARGS__);                                             \
        goto done;                                                                                                   \
    } while (0)
    if (!json_is_object(claims)) MALFORMED("The license key's payload is not a JSON object");
    double exp = 0, iat = 0, nbf = 0, grace = 0;
    int has_exp = lic_jopt_num(claims, "exp", &exp);
    int has_iat = lic_jopt_num(claims, "iat", &iat);
    int has_nbf = lic_jopt_num(claims, "nbf", &nbf);
    if (has_exp < 0 || has_iat < 0 || has_nbf < 0) MALFORMED("The license key's exp, iat or nbf is not a number");
    int64_t now_s = (int64_t)floor((double)p->now / 1000.0);
    if (has_nbf == 1 && nbf > (double)now_s) MALFORMED("The license key is not valid yet (nbf)");
    if (has_exp == 1 && (double)now_s >= exp) {
        rc = lic_fail(c, LICENSING_EXPIRED, "expired", "The license key has expired");
        goto done;
    }
    if (has_iat != 1) MALFORMED("The license key's payload is not a license: iat is missing");
    lic = calloc(1, sizeof *lic);
    if (!lic) {
        rc = lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
        goto done;
    }
    lic->format = 0;
    lic->max_clients = -1;
    if (lic_jopt_str(claims, "licenseId", &s) != 1) MALFORMED("The license key's payload is not a license: no licenseId");
    dup_opt(&lic->license_id, s);
    const char *type = enum_name(json_object_get(claims, "licenseType"), TYPES, 3, 0);
    if (!type) MALFORMED("The license key's licenseType is missing or unknown");
    dup_opt(&lic->license_type, type);
    json_t *mode = json_object_get(claims, "licensingMode");
    if (mode && !json_is_null(mode)) {
        const char *name = enum_name(mode, MODES, 3, 0);
        if (!name) MALFORMED("The license key's licensingMode is unknown");
        dup_opt(&lic->licensing_mode, name);
    }
    json_t *status = json_object_get(claims, "status");
    if (status && !json_is_null(status)) {
        const char *name = enum_name(status, STATUSES, 5, 1);
        if (!name) MALFORMED("The license key's status is unknown");
        dup_opt(&lic->status, name);
    }
    static const char *const optional[] = {"productCode", "edition", "machineId", "clientId", "nonce",
                                           "expireAt",    "supportExpireAt"};
    const char *values[7] = {0};
    for (size_t i = 0; i < 7; i++)
        if (lic_jopt_str(claims, optional[i], &values[i]) < 0)
            MALFORMED("The license key's %s is not a string", optional[i]);
    if (dup_opt(&lic->product_code, values[0]) || dup_opt(&lic->edition, values[1]) ||
        dup_opt(&lic->machine_id, values[2]) || dup_opt(&lic->client_id, values[3]) ||
        dup_opt(&lic->nonce, values[4])) {
        rc = lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
        goto done;
    }
    if (lic_jstrings(claims, "features", &lic->features, &lic->feature_count) != 0)
        MALFORMED("The license key's features are not a list of strings");
    int has_grace = lic_jopt_num(claims, "offlineGraceDays", &grace);
    if (has_grace < 0) MALFORMED("The license key's offlineGraceDays is not a number");
    lic->offline_grace_days = has_grace == 1 ? (int)grace : 0;
    lic->issued_at = (int64_t)floor(iat * 1000);
    lic->expires_at = has_exp == 1 ? (int64_t)floor(exp * 1000) : 0;
    if (values[5]) {
        if (lic_parse_iso(values[5], &lic->license_expire_at) != 0)
            MALFORMED("The license key's expireAt is not a date: %s", values[5]);
    }
    if (values[6] && lic_parse_iso(values[6], &lic->support_expire_at) != 0) lic->support_expire_at = 0;
    dup_opt(&lic->key_id, j.signer_kid);
    lic->payload_json = lic_strdup(j.payload);
    if (values[5] && lic->license_expire_at <= p->now) {
        rc = lic_fail(c, LICENSING_EXPIRED, "expired", "The license expired at %s", values[5]);
        goto done;
    }
    if (p->product_code && (!lic->product_code || strcmp(lic->product_code, p->product_code) != 0)) {
        rc = lic_fail(c, LICENSING_PRODUCT, "product", "The license key is for product %s, not %s",
                      lic->product_code ? lic->product_code : "(none)", p->product_code);
        goto done;
    }
    if (!lic_empty(p->machine_id)) {
        /* Activation and Floating keys prove a use on one machine: one naming no machine proves nothing here. */
        int needs_machine = lic->licensing_mode && strcmp(lic->licensing_mode, "File") != 0;
        if (lic->machine_id ? strcmp(lic->machine_id, p->machine_id) != 0 : needs_machine) {
            rc = lic_fail(c, LICENSING_MACHINE, "machine",
                          lic->machine_id ? "The license key was issued to another machine"
                                          : "The license key names no machine");
            goto done;
        }
    }
    if (p->nonce && (!lic->nonce || strcmp(lic->nonce, p->nonce) != 0)) {
        rc = lic_fail(c, LICENSING_NONCE, "nonce",
                      "The license key does not echo this request's nonce: it is not the answer to this request");
        goto done;
    }
    rc = LICENSING_OK;
done:
#undef MALFORMED
    json_decref(claims);
    jws_free(&j);
    if (rc == LICENSING_OK && out) {
        *out = lic;
    } else {
        licensing_license_free(lic);
    }
    return rc;
}

/* ---- License files ---- */

/* The plain payload of an encrypted file ({v, enc: "A256GCM", iv, ciphertext}), as JSON text. */
static int open_sealed(licensing_client *c, const json_t *sealed, const lic_params *p, char **plain,
                       size_t *plain_len) {
    const char *enc = lic_jstr(sealed, "enc");
    if (!enc || strcmp(enc, "A256GCM") != 0)
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The license file is encrypted with %s, not A256GCM",
                        enc ? enc : "(nothing named)");
    if (lic_empty(p->user_key))
        return lic_fail(c, LICENSING_DECRYPT, "decrypt",
                        "The license file is encrypted: the license's user key is needed to open it");
    const char *iv_text = lic_jstr(sealed, "iv"), *ct_text = lic_jstr(sealed, "ciphertext");
    unsigned char *iv = NULL, *ct = NULL;
    size_t iv_len = 0, ct_len = 0;
    if (!iv_text || !ct_text || lic_b64_decode(iv_text, strlen(iv_text), 0, &iv, &iv_len) != 0 ||
        lic_b64_decode(ct_text, strlen(ct_text), 0, &ct, &ct_len) != 0) {
        free(iv);
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The encrypted license file has no iv or ciphertext");
    }
    char *ikm = lic_compact_user_key(p->user_key);
    unsigned char key[32];
    int rc = LICENSING_OK;
    const char *machine = p->machine_id ? p->machine_id : "";
    if (!ikm || lic_hkdf_sha256(ikm, strlen(ikm), machine, strlen(machine), "license-file", 12, key, 32) != 0 ||
        lic_aes256gcm_open(key, iv, iv_len, ct, ct_len, (unsigned char **)plain, plain_len) != 0) {
        rc = lic_fail(c, LICENSING_DECRYPT, "decrypt",
                      "The encrypted license file does not open with this machine id and user key: it was made for "
                      "another machine or license");
    }
    free(ikm);
    free(iv);
    free(ct);
    return rc;
}

/* What every file passes after its signature and binding: the product (product), the clock (clock), the file's end
   and the license's expiry (expired). */
int lic_in_force(licensing_client *c, const char *product_code, int64_t issued_at, int64_t ends_at,
                 int64_t license_expire_at, const lic_params *p) {
    char a[32], b[32];
    if (p->product_code && (!product_code || strcmp(product_code, p->product_code) != 0))
        return lic_fail(c, LICENSING_PRODUCT, "product", "The license file is for product %s, not %s",
                        product_code ? product_code : "(none)", p->product_code);
    if (p->now + LIC_CLOCK_SKEW_MS < issued_at) {
        lic_format_iso(p->now, a);
        lic_format_iso(issued_at, b);
        return lic_fail(c, LICENSING_CLOCK, "clock",
                        "The computer's clock (%s) is earlier than the license file's issue time (%s): the clock was "
                        "set back", a, b);
    }
    if (p->last_seen != 0 && p->now + LIC_CLOCK_SKEW_MS < p->last_seen) {
        lic_format_iso(p->now, a);
        lic_format_iso(p->last_seen, b);
        return lic_fail(c, LICENSING_CLOCK, "clock",
                        "The computer's clock (%s) is earlier than the last time this application saw (%s): the clock "
                        "was set back", a, b);
    }
    if (p->now >= ends_at) {
        lic_format_iso(ends_at, a);
        return lic_fail(c, LICENSING_EXPIRED, "expired", "The license file expired at %s: check out a new one", a);
    }
    if (license_expire_at != 0 && p->now >= license_expire_at) {
        lic_format_iso(license_expire_at, a);
        return lic_fail(c, LICENSING_EXPIRED, "expired", "The license expired at %s", a);
    }
    return LICENSING_OK;
}

int lic_verify_signed_file(licensing_client *c, const char *text, const json_t *jwks, const lic_params *p,
                           licensing_license **out) {
    jws j;
    int rc = jws_verify(c, text, jwks, "license file", &j);
    if (rc != LICENSING_OK) return rc;
    json_t *outer = NULL, *payload = NULL;
    char *plain = NULL;
    size_t plain_len = 0;
    licensing_license *lic = NULL;
    int encrypted = 0;
#define REFUSE(status, code, ...)                                                                                    \
    do {                                                                                                             \
        rc = lic_fail(c, status, code, __VA_ARGS__);                                                                 \
        goto done;                                                                                                   \
    } while (0)
    if (!j.typ || strcmp(j.typ, "license-file+jwt") != 0)
        REFUSE(LICENSING_MALFORMED, "malformed", "The signed text is not a license file (typ %s, not license-file+jwt)",
               j.typ ? j.typ : "missing");
    outer = lic_json_parse(j.payload, j.payload_len);
    if (!json_is_object(outer)) REFUSE(LICENSING_MALFORMED, "malformed", "The license file's payload is not a JSON object");
    encrypted = json_object_get(outer, "enc") != NULL || json_object_get(outer, "ciphertext") != NULL;
    if (encrypted) {
        rc = open_sealed(c, outer, p, &plain, &plain_len);
        if (rc != LICENSING_OK) goto done;
        payload = lic_json_parse(plain, plain_len);
        if (!payload) REFUSE(LICENSING_MALFORMED, "malformed", "The decrypted license file is not JSON");
    } else {
        payload = json_incref(outer);
    }
    if (!json_is_object(payload)) REFUSE(LICENSING_MALFORMED, "malformed", "The license file's payload is not a JSON object");
    json_t *v = json_object_get(payload, "v");
    if (!json_is_number(v) || json_number_value(v) != 1)
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file is not of version 1");
    json_t *machine = json_object_get(payload, "machine");
    json_t *machine_id = json_object_get(machine, "machineId");
    if (!json_is_object(machine) || !json_is_string(machine_id))
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file names no machine");
    const char *client_id = lic_jstr(machine, "clientId");
    if (!p->machine_id || strcmp(json_string_value(machine_id), p->machine_id) != 0)
        REFUSE(LICENSING_MACHINE, "machine", "The license file was issued to another machine");
    if (p->client_id && client_id && strcmp(client_id, p->client_id) != 0)
        REFUSE(LICENSING_MACHINE, "machine", "The license file was issued to another client on this machine");
    const char *nonce = json_is_string(json_object_get(payload, "nonce"))
                            ? json_string_value(json_object_get(payload, "nonce"))
                            : NULL;
    if (p->nonce && (!nonce || strcmp(nonce, p->nonce) != 0))
        REFUSE(LICENSING_NONCE, "nonce",
               "The license file does not answer this request (another nonce): enter the answer to the code shown now");
    int64_t issued_at = 0, expires_at = 0, borrow_until = 0;
    if (lic_jopt_date(payload, "issuedAt", &issued_at) != 1 || lic_jopt_date(payload, "expiresAt", &expires_at) != 1)
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file's issuedAt or expiresAt is not a date");
    json_t *borrow = json_object_get(payload, "borrow");
    int has_borrow = json_is_object(borrow);
    if (has_borrow && lic_jopt_date(borrow, "until", &borrow_until) != 1)
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file's borrow.until is not a date");

    /* The license and its entitlements, readable as the service writes them. */
    json_t *license = json_object_get(payload, "license"), *ent = json_object_get(payload, "entitlements");
    const char *s;
    lic = calloc(1, sizeof *lic);
    if (!lic) REFUSE(LICENSING_NO_MEMORY, "memory", "Out of memory");
    lic->format = 1;
    lic->encrypted = encrypted;
    if (!json_is_object(license) || lic_jopt_str(license, "licenseId", &s) != 1 ||
        !json_is_string(json_object_get(license, "licenseId")))
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file's license is not readable (licenseId)");
    dup_opt(&lic->license_id, s);
    const char *mode = enum_name(json_object_get(license, "licensingMode"), MODES, 3, 0);
    const char *type = enum_name(json_object_get(license, "licenseType"), TYPES, 3, 0);
    if (!mode || !type)
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file's license is not readable (licensingMode, licenseType)");
    dup_opt(&lic->licensing_mode, mode);
    dup_opt(&lic->license_type, type);
    if (lic_jopt_str(license, "edition", &s) < 0)
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file's license is not readable (edition)");
    dup_opt(&lic->edition, s);
    int64_t issue_date = 0;
    if (lic_jopt_date(license, "issueDate", &issue_date) < 0 ||
        lic_jopt_date(license, "expireAt", &lic->license_expire_at) < 0 ||
        lic_jopt_date(license, "supportExpireAt", &lic->support_expire_at) < 0)
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file's license dates are not dates");
    if (lic_jstrings(license, "features", &lic->features, &lic->feature_count) != 0)
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file's features are not a list of strings");
    json_t *licensee = json_object_get(license, "licensee");
    if (licensee && !json_is_null(licensee) && !json_is_object(licensee))
        REFUSE(LICENSING_MALFORMED, "malformed", "The license file's licensee is not an object");
    double max_clients = 0;
    int64_t ent_date = 0;
    char **ent_features = NULL;
    size_t ent_feature_count = 0;
    const char *ent_type = NULL, *ent_edition = NULL, *product = NULL;
    int ent_ok = json_is_object(ent) && lic_jopt_num(ent, "maxClients", &max_clients) == 1 &&
                 lic_jopt_str(ent, "productCode", &product) >= 0 && json_is_string(json_object_get(ent, "productCode")) &&
                 json_is_string(json_object_get(ent, "licenseType")) && lic_jopt_str(ent, "licenseType", &ent_type) >= 0 &&
                 lic_jopt_str(ent, "edition", &ent_edition) >= 0 && lic_jopt_date(ent, "expireAt", &ent_date) >= 0 &&
                 lic_jopt_date(ent, "supportExpireAt", &ent_date) >= 0 &&
                 lic_jstrings(ent, "features", &ent_features, &ent_feature_count) == 0;
    lic_free_strings(ent_features, ent_feature_count);
    if (!ent_ok) REFUSE(LICENSING_MALFORMED, "malformed", "The license file's entitlements are not readable");
    lic->product_code = lic_strdup(json_string_value(json_object_get(ent, "productCode")));
    lic->max_clients = (int64_t)max_clients;
    lic->machine_id = lic_strdup(json_string_value(machine_id));
    dup_opt(&lic->client_id, client_id);
    dup_opt(&lic->nonce, nonce);
    dup_opt(&lic->key_id, j.signer_kid);
    lic->issued_at = issued_at;
    lic->expires_at = expires_at;
    lic->payload_json = encrypted ? lic_strndup(plain, plain_len) : lic_strdup(j.payload);
    rc = lic_in_force(c, lic->product_code, issued_at,
                      has_borrow && borrow_until < expires_at ? borrow_until : expires_at, lic->license_expire_at, p);
done:
#undef REFUSE
    json_decref(outer);
    json_decref(payload);
    free(plain);
    jws_free(&j);
    if (rc == LICENSING_OK && out) {
        *out = lic;
    } else {
        licensing_license_free(lic);
    }
    return rc;
}

int lic_verify_license_file(licensing_client *c, const char *text, const json_t *jwks, const lic_params *p,
                            licensing_license **out) {
    const char *s = text;
    while (isspace((unsigned char)*s)) s++;
    /* A response code of air-gapped activation may be kept as the license file. */
    if ((s[0] == 'L' || s[0] == 'l') && (s[1] == 'R' || s[1] == 'r') && isalpha((unsigned char)s[2]) &&
        isdigit((unsigned char)s[3]))
        return lic_verify_response_code(c, s, jwks, p, out);
    return lic_verify_signed_file(c, s, jwks, p, out);
}

/* ---- Update checks ---- */

int lic_verify_update(licensing_client *c, const json_t *answer, const json_t *jwks, licensing_update **out) {
    json_t *data = json_object_get(answer, "data");
    const char *signature = NULL, *key_id = NULL;
    if (!json_is_object(answer) || !json_is_object(data) || lic_jopt_str(answer, "signature", &signature) != 1 ||
        lic_jopt_str(answer, "keyId", &key_id) != 1)
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The update check has no data, signature or keyId");
    lic_key keys[8];
    size_t count = lic_keys_named(jwks, key_id, keys, 8);
    if (count == 0)
        return lic_fail(c, LICENSING_UNKNOWN_KEY, "unknownKey", "No published P-256 key has the id %s", key_id);
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    if (lic_b64_decode(signature, strlen(signature), 0, &sig, &sig_len) != 0 || sig_len != 64) {
        free(sig);
        return lic_fail(c, LICENSING_SIGNATURE, "signature", "The signature is not 64 bytes (r||s) of base64");
    }
    char *canonical = NULL;
    size_t canonical_len = 0;
    if (lic_jcs(data, &canonical, &canonical_len) != 0) {
        free(sig);
        return lic_fail(c, LICENSING_SIGNATURE, "signature", "The signed data cannot be canonicalized");
    }
    int verified = 0;
    for (size_t i = 0; i < count && !verified; i++)
        verified = lic_es256_verify(keys[i].x, keys[i].y, sig, canonical, canonical_len) == 1;
    free(sig);
    if (!verified) {
        free(canonical);
        return lic_fail(c, LICENSING_SIGNATURE, "signature", "The update check's signature does not match its data");
    }
    licensing_update *u = calloc(1, sizeof *u);
    if (!u) {
        free(canonical);
        return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    }
    u->data_json = canonical;
    u->key_id = lic_strdup(key_id);
    int rc = LICENSING_OK;
    int flag = 0;
    if (lic_jopt_bool(data, "updateAvailable", &u->available) != 1 ||
        lic_jopt_bool(data, "installable", &flag) < 0 || lic_jopt_bool(data, "required", &u->required) < 0 ||
        lic_jopt_bool(data, "rollback", &u->rollback) < 0) {
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The update check's data has no updateAvailable");
        goto done;
    }
    u->installable = flag;
    const char *s;
    json_t *release = json_object_get(data, "release");
    if (release && !json_is_null(release)) {
        if (!json_is_object(release) || lic_jopt_str(release, "version", &s) != 1) {
            rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The update check's release has no version");
            goto done;
        }
        u->version = lic_strdup(s);
    }
    if (lic_jopt_str(data, "current", &s) == 1) u->current = lic_strdup(s);
    if (lic_jopt_str(data, "latest", &s) == 1) u->latest = lic_strdup(s);
    if (lic_jopt_str(data, "withheldReason", &s) == 1) u->withheld_reason = lic_strdup(s);
    if (lic_jopt_str(data, "rollbackReason", &s) == 1) u->rollback_reason = lic_strdup(s);
    json_t *download = json_object_get(data, "download");
    if (json_is_object(download)) {
        double size = 0;
        if (lic_jopt_str(download, "url", &s) == 1) u->download_url = lic_strdup(s);
        if (lic_jopt_str(download, "fileName", &s) == 1) u->file_name = lic_strdup(s);
        if (lic_jopt_str(download, "sha256", &s) == 1) u->sha256 = lic_strdup(s);
        if (lic_jopt_str(download, "sha512", &s) == 1) u->sha512 = lic_strdup(s);
        if (lic_jopt_num(download, "size", &size) == 1) u->size = (int64_t)size;
    }
done:
    if (rc == LICENSING_OK && out) {
        *out = u;
    } else {
        licensing_update_free(u);
    }
    return rc;
}

/* ---- Freeing ---- */

void licensing_license_free(licensing_license *l) {
    if (!l) return;
    free(l->license_id);
    free(l->product_code);
    free(l->machine_id);
    free(l->client_id);
    free(l->licensing_mode);
    free(l->license_type);
    free(l->edition);
    free(l->status);
    free(l->nonce);
    free(l->key_id);
    lic_free_strings(l->features, l->feature_count);
    free(l->payload_json);
    free(l);
}

void licensing_update_free(licensing_update *u) {
    if (!u) return;
    free(u->version);
    free(u->current);
    free(u->latest);
    free(u->withheld_reason);
    free(u->rollback_reason);
    free(u->download_url);
    free(u->file_name);
    free(u->sha256);
    free(u->sha512);
    free(u->key_id);
    free(u->data_json);
    free(u);
}
