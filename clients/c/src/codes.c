/*
 * The codes of air-gapped activation (CONTRACT section 11, docs/reference/offline-codes.md): a request code (LRQ1)
 * the application shows, and the response code (LRS2, or LRS1 of the first version) the person brings back. Each is
 * `PREFIX-XXXXX-...`: Crockford base32 of the payload and its CRC-32 (big-endian), in groups of five.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char ALPHABET[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

uint32_t lic_crc32(const unsigned char *data, size_t len) {
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        crc ^= data[i];
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
    }
    return crc ^ 0xffffffffu;
}

static char *base32_encode(const unsigned char *data, size_t len) {
    char *out = malloc(len * 8 / 5 + 2);
    if (!out) return NULL;
    size_t n = 0;
    uint32_t buffer = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        buffer = ((buffer << 8) | data[i]) & 0xffff;
        bits += 8;
        while (bits >= 5) {
            out[n++] = ALPHABET[(buffer >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits > 0) out[n++] = ALPHABET[(buffer << (5 - bits)) & 31];
    out[n] = '\0';
    return out;
}

static int base32_value(char ch) {
    ch = (char)toupper((unsigned char)ch);
    if (ch == 'I' || ch == 'L') return 1;
    if (ch == 'O') return 0;
    const char *at = strchr(ALPHABET, ch);
    return ch != '\0' && at ? (int)(at - ALPHABET) : -1;
}

/* Whole bytes of base32 text (the trailing padding bits dropped); -1 for a character outside the alphabet. */
int lic_base32_decode(const char *text, size_t len, unsigned char **out, size_t *out_len) {
    unsigned char *bytes = malloc(len * 5 / 8 + 1);
    if (!bytes) return -1;
    size_t n = 0;
    uint32_t buffer = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = base32_value(text[i]);
        if (v < 0) {
            free(bytes);
            return -1;
        }
        buffer = ((buffer << 5) | (uint32_t)v) & 0xffff;
        bits += 5;
        if (bits >= 8) {
            bytes[n++] = (unsigned char)((buffer >> (bits - 8)) & 0xff);
            bits -= 8;
        }
    }
    *out = bytes;
    *out_len = n;
    return 0;
}

char *lic_encode_code(const char *prefix, const unsigned char *payload, size_t len) {
    unsigned char *bytes = malloc(len + 4);
    if (!bytes) return NULL;
    memcpy(bytes, payload, len);
    uint32_t crc = lic_crc32(payload, len);
    bytes[len] = (unsigned char)(crc >> 24);
    bytes[len + 1] = (unsigned char)(crc >> 16);
    bytes[len + 2] = (unsigned char)(crc >> 8);
    bytes[len + 3] = (unsigned char)crc;
    char *b32 = base32_encode(bytes, len + 4);
    free(bytes);
    if (!b32) return NULL;
    size_t n = strlen(b32);
    char *out = malloc(strlen(prefix) + n + n / 5 + 2);
    if (out) {
        size_t o = strlen(prefix);
        memcpy(out, prefix, o);
        for (size_t i = 0; i < n; i++) {
            if (i % 5 == 0) out[o++] = '-';
            out[o++] = b32[i];
        }
        out[o] = '\0';
    }
    free(b32);
    return out;
}

int lic_request_code(licensing_client *c, const char *user_key, const char *machine_id, const char *client_id,
                     const char *nonce, const char *product_code, char **code, char **json_text) {
    /* As JSON.stringify writes {v, k, m, c?, n, p?}: members in this order, no whitespace. */
    lic_buf b = {0};
    int bad = 0;
    lic_buf_puts(&b, "{\"v\":1,\"k\":");
    bad |= lic_buf_json_string(&b, user_key, strlen(user_key));
    lic_buf_puts(&b, ",\"m\":");
    bad |= lic_buf_json_string(&b, machine_id, strlen(machine_id));
    if (!lic_empty(client_id)) {
        lic_buf_puts(&b, ",\"c\":");
        bad |= lic_buf_json_string(&b, client_id, strlen(client_id));
    }
    lic_buf_puts(&b, ",\"n\":");
    bad |= lic_buf_json_string(&b, nonce, strlen(nonce));
    if (!lic_empty(product_code)) {
        lic_buf_puts(&b, ",\"p\":");
        bad |= lic_buf_json_string(&b, product_code, strlen(product_code));
    }
    lic_buf_puts(&b, "}");
    if (bad) {
        free(b.data);
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "The request's texts are not valid UTF-8");
    }
    size_t len = b.len;
    char *json = lic_buf_take(&b);
    char *out = json ? lic_encode_code("LRQ1", (const unsigned char *)json, len) : NULL;
    if (!out) {
        free(json);
        return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    }
    *code = out;
    if (json_text)
        *json_text = json;
    else
        free(json);
    return LICENSING_OK;
}

/* ---- Response codes ---- */

typedef struct lrs2 {
    int has_client;
    unsigned char key_id[4];
    uint32_t issued_at, expires_at;
    unsigned char machine[8], client[8], nonce[8];
    int mode, type;
    uint32_t max_clients, issue_date, expire_at, support_expire_at;
    char *license_id, *product_code, *edition;
    char **features;
    size_t feature_count;
} lrs2;

static void lrs2_free(lrs2 *r) {
    free(r->license_id);
    free(r->product_code);
    free(r->edition);
    lic_free_strings(r->features, r->feature_count);
}

typedef struct reader {
    const unsigned char *p;
    size_t len, at;
    int bad;
} reader;

static const unsigned char *take(reader *r, size_t n) {
    if (r->bad || r->at + n > r->len) {
        r->bad = 1;
        return NULL;
    }
    r->at += n;
    return r->p + r->at - n;
}

static unsigned byte(reader *r) {
    const unsigned char *b = take(r, 1);
    return b ? b[0] : 0;
}

static uint32_t u32(reader *r) {
    const unsigned char *b = take(r, 4);
    return b ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3] : 0;
}

static char *text(reader *r) {
    unsigned n = byte(r);
    const unsigned char *b = take(r, n);
    if (!b) return NULL;
    if (!lic_utf8_valid((const char *)b, n)) {
        r->bad = 1;
        return NULL;
    }
    char *s = lic_strndup((const char *)b, n);
    if (!s) r->bad = 1;
    return s;
}

static int copy_into(reader *r, unsigned char *dst, size_t n) {
    const unsigned char *b = take(r, n);
    if (b) memcpy(dst, b, n);
    return b ? 0 : -1;
}

/* The body of an LRS2 code (docs/reference/offline-codes.md); -1 when the bytes are not one. */
static int lrs2_decode(const unsigned char *body, size_t len, lrs2 *out) {
    memset(out, 0, sizeof *out);
    reader r = {body, len, 0, 0};
    unsigned flags = byte(&r);
    if (flags & ~1u) return -1;
    out->has_client = flags & 1;
    copy_into(&r, out->key_id, 4);
    out->issued_at = u32(&r);
    out->expires_at = u32(&r);
    copy_into(&r, out->machine, 8);
    if (out->has_client) copy_into(&r, out->client, 8);
    copy_into(&r, out->nonce, 8);
    out->mode = (int)byte(&r);
    out->type = (int)byte(&r);
    out->max_clients = u32(&r);
    out->issue_date = u32(&r);
    out->expire_at = u32(&r);
    out->support_expire_at = u32(&r);
    out->license_id = text(&r);
    out->product_code = text(&r);
    out->edition = text(&r);
    unsigned count = byte(&r);
    if (!r.bad && count > 0) {
        out->features = calloc(count, sizeof *out->features);
        if (!out->features) r.bad = 1;
        for (unsigned i = 0; i < count && !r.bad; i++) {
            out->features[i] = text(&r);
            out->feature_count = i + 1;
        }
    }
    if (r.bad || r.at != len || out->mode > 2 || out->type > 2) {
        lrs2_free(out);
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

static int hash_matches(const char *text_value, const unsigned char *expected, size_t n) {
    unsigned char digest[32];
    lic_sha256(text_value, strlen(text_value), digest);
    return memcmp(digest, expected, n) == 0;
}

static int verify_lrs2(licensing_client *c, const unsigned char *payload, size_t len, const json_t *jwks,
                       const lic_params *p, licensing_license **out) {
    if (len <= 64)
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The response code does not hold a response");
    size_t body_len = len - 64;
    lrs2 r;
    if (lrs2_decode(payload, body_len, &r) != 0)
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The response code does not hold a response");
    int rc;
    licensing_license *lic = NULL;
    unsigned char *signed_bytes = malloc(body_len + 4);
    lic_key keys[16];
    size_t count = lic_keys_named(jwks, NULL, keys, 16), named = 0;
    for (size_t i = 0; i < count; i++) {
        if (keys[i].kid && hash_matches(keys[i].kid, r.key_id, 4)) keys[named++] = keys[i];
    }
    if (!signed_bytes) {
        rc = lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
        goto done;
    }
    if (named == 0) {
        rc = lic_fail(c, LICENSING_UNKNOWN_KEY, "unknownKey",
                      "The response code is signed by a key this application does not know (not in its JWK Set)");
        goto done;
    }
    memcpy(signed_bytes, "LRS2", 4);
    memcpy(signed_bytes + 4, payload, body_len);
    const char *signer = NULL;
    for (size_t i = 0; i < named && !signer; i++)
        if (lic_es256_verify(keys[i].x, keys[i].y, payload + body_len, signed_bytes, body_len + 4) == 1)
            signer = keys[i].kid;
    if (!signer) {
        rc = lic_fail(c, LICENSING_SIGNATURE, "signature", "The response code's signature does not verify: it was altered");
        goto done;
    }
    if (!p->machine_id || !hash_matches(p->machine_id, r.machine, 8)) {
        rc = lic_fail(c, LICENSING_MACHINE, "machine", "The response code was issued to another machine");
        goto done;
    }
    int client_matched = r.has_client && p->client_id;
    if (client_matched && !hash_matches(p->client_id, r.client, 8)) {
        rc = lic_fail(c, LICENSING_MACHINE, "machine", "The response code was issued to another client on this machine");
        goto done;
    }
    if (p->nonce && !hash_matches(p->nonce, r.nonce, 8)) {
        rc = lic_fail(c, LICENSING_NONCE, "nonce",
                      "The response code does not answer this request (another nonce): enter the answer to the code "
                      "shown now");
        goto done;
    }
    static const char *const modes[] = {"File", "Activation", "Floating"};
    static const char *const types[] = {"Standard", "Demo", "Trial"};
    lic = calloc(1, sizeof *lic);
    if (!lic) {
        rc = lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
        goto done;
    }
    lic->format = 2;
    lic->license_id = r.license_id;
    lic->product_code = r.product_code;
    r.license_id = r.product_code = NULL;
    if (r.edition && r.edition[0]) {
        lic->edition = r.edition;
        r.edition = NULL;
    }
    lic->features = r.features;
    lic->feature_count = r.feature_count;
    r.features = NULL;
    r.feature_count = 0;
    lic->licensing_mode = lic_strdup(modes[r.mode]);
    lic->license_type = lic_strdup(types[r.type]);
    lic->machine_id = lic_strdup(p->machine_id);
    if (client_matched) lic->client_id = lic_strdup(p->client_id);
    if (p->nonce) lic->nonce = lic_strdup(p->nonce);
    lic->key_id = lic_strdup(signer);
    lic->issued_at = (int64_t)r.issued_at * 1000;
    lic->expires_at = (int64_t)r.expires_at * 1000;
    lic->license_expire_at = (int64_t)r.expire_at * 1000;
    lic->support_expire_at = (int64_t)r.support_expire_at * 1000;
    lic->max_clients = r.max_clients;
    rc = lic_in_force(c, lic->product_code, lic->issued_at, lic->expires_at, lic->license_expire_at, p);
done:
    free(signed_bytes);
    lrs2_free(&r);
    if (rc == LICENSING_OK && out) {
        *out = lic;
    } else {
        licensing_license_free(lic);
    }
    return rc;
}

int lic_verify_response_code(licensing_client *c, const char *code, const json_t *jwks, const lic_params *p,
                             licensing_license **out) {
    size_t len = strlen(code);
    char *compact = malloc(len + 1);
    if (!compact) return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)code[i];
        if (ch == '-' || isspace(ch)) continue;
        compact[n++] = (char)toupper(ch);
    }
    compact[n] = '\0';
    int rc;
    unsigned char *bytes = NULL;
    size_t count = 0;
    if (n < 4) {
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "A response code starts with LRS2-");
        goto done;
    }
    if (strncmp(compact, "LRS2", 4) != 0 && strncmp(compact, "LRS1", 4) != 0) {
        if (strncmp(compact, "LRQ", 3) == 0)
            rc = lic_fail(c, LICENSING_MALFORMED, "malformed",
                          "This is a request code (%.4s-...), not a response code (LRS2-...): enter the answer from "
                          "the activation page, not the code the application shows", compact);
        else if (strncmp(compact, "LRS", 3) == 0)
            rc = lic_fail(c, LICENSING_MALFORMED, "malformed",
                          "This response code is of version %c, which this version does not read (expected LRS2-)",
                          compact[3]);
        else
            rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "A response code starts with LRS2-");
        goto done;
    }
    if (lic_base32_decode(compact + 4, n - 4, &bytes, &count) != 0) {
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed",
                      "The response code has characters that are not part of it (only digits and the letters A-Z "
                      "except U)");
        goto done;
    }
    if (count <= 4) {
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The response code is incomplete: part of it is missing");
        goto done;
    }
    size_t payload_len = count - 4;
    uint32_t sum = (uint32_t)bytes[payload_len] << 24 | (uint32_t)bytes[payload_len + 1] << 16 |
                   (uint32_t)bytes[payload_len + 2] << 8 | bytes[payload_len + 3];
    if (sum != lic_crc32(bytes, payload_len)) {
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed",
                      "The response code's checksum does not match: a character was mistyped or part of the code is "
                      "missing");
        goto done;
    }
    if (compact[3] == '2') {
        rc = verify_lrs2(c, bytes, payload_len, jwks, p, out);
        goto done;
    }
    /* LRS1: the license file's compact JWS. */
    int jws_like = lic_utf8_valid((const char *)bytes, payload_len);
    int dots = 0;
    for (size_t i = 0; jws_like && i < payload_len; i++) {
        unsigned char ch = bytes[i];
        if (ch == '.') {
            if (i == 0 || bytes[i - 1] == '.') jws_like = 0;
            dots++;
        } else if (!isalnum(ch) && ch != '-' && ch != '_') {
            jws_like = 0;
        }
    }
    if (!jws_like || dots != 2 || payload_len == 0 || bytes[payload_len - 1] == '.') {
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The response code does not hold a license file");
        goto done;
    }
    char *jws = lic_strndup((const char *)bytes, payload_len);
    if (!jws) {
        rc = lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
        goto done;
    }
    rc = lic_verify_signed_file(c, jws, jwks, p, out);
    free(jws);
done:
    free(bytes);
    free(compact);
    return rc;
}
