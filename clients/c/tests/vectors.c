/*
 * The shared vectors (clients/vectors/manifest.json, its README): every vector of every kind this client knows, its
 * output or its refusal code; and `tamper`: each signed vector that verifies stops verifying when one byte of what
 * was signed, or of the signature, is changed.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testing.h"

typedef struct outcome {
    int status;
    char code[64];
    char message[512];
    json_t *output;
} outcome;

static json_t *text_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *instant(int64_t ms) {
    if (ms == 0) return json_null();
    char iso[32];
    licensing_format_time(ms, iso, sizeof iso);
    return json_string(iso);
}

static void outcome_of(outcome *o, licensing_client *c, int status) {
    o->status = status;
    snprintf(o->code, sizeof o->code, "%s", status == LICENSING_OK ? "" : licensing_last_code(c));
    snprintf(o->message, sizeof o->message, "%s", licensing_last_error(c));
}

static licensing_check check_of(const json_t *v) {
    licensing_check check = {0};
    check.machine_id = test_param(v, "machineId");
    check.client_id = test_param(v, "clientId");
    check.product_code = test_param(v, "productCode");
    check.user_key = test_param(v, "userKey");
    check.nonce = test_param(v, "nonce");
    check.now = test_param_time(v, "now");
    check.last_seen = test_param_time(v, "lastSeen");
    return check;
}

/* A client that verifies offline with the vector's JWK Set (pinned). */
static licensing_client *offline_client(const char *dir, const json_t *v) {
    licensing_client *c = NULL;
    licensing_client_new(NULL, &c);
    char *jwks = test_vector_file(dir, v, "jwks");
    if (jwks) licensing_set_trusted_keys(c, jwks);
    free(jwks);
    return c;
}

static json_t *license_output(const licensing_license *l, int validation) {
    if (validation)
        return json_pack("{s:b, s:o, s:o, s:o, s:o, s:o, s:i, s:o, s:o}", "valid", 1, "licenseId",
                         text_or_null(l->license_id), "productCode", text_or_null(l->product_code), "machineId",
                         text_or_null(l->machine_id), "licensingMode", text_or_null(l->licensing_mode), "status",
                         text_or_null(l->status), "offlineGraceDays", l->offline_grace_days, "issuedAt",
                         instant(l->issued_at), "expiresAt", instant(l->expires_at));
    return json_pack("{s:o, s:o, s:o, s:o, s:b}", "licenseId", text_or_null(l->license_id), "machineId",
                     text_or_null(l->machine_id), "productCode", text_or_null(l->product_code), "expiresAt",
                     instant(l->expires_at), "encrypted", l->encrypted);
}

/* Runs a vector whose main input (`text`) may be replaced (the tamper test). 0: ran; -1: a kind not known. */
static int run_with(const char *dir, const json_t *v, const char *text, outcome *o) {
    memset(o, 0, sizeof *o);
    const char *kind = json_string_value(json_object_get(v, "kind"));
    licensing_client *c = offline_client(dir, v);
    licensing_check check = check_of(v);
    int rc;
    if (strcmp(kind, "jcs") == 0) {
        char *canonical = NULL;
        rc = licensing_canonicalize(c, text, strlen(text), &canonical);
        outcome_of(o, c, rc);
        if (rc == LICENSING_OK) o->output = json_pack("{s:s}", "canonical", canonical);
        licensing_free(canonical);
    } else if (strcmp(kind, "validation") == 0 || strcmp(kind, "license-file") == 0 ||
               strcmp(kind, "airgap-response") == 0) {
        licensing_license *l = NULL;
        if (kind[0] == 'v')
            rc = licensing_verify_validation_answer(c, text, &check, &l);
        else if (kind[0] == 'l')
            rc = licensing_verify_license_file(c, text, &check, &l);
        else
            rc = licensing_airgap_verify(c, text, &check, &l);
        outcome_of(o, c, rc);
        if (rc == LICENSING_OK) o->output = license_output(l, kind[0] == 'v');
        licensing_license_free(l);
    } else if (strcmp(kind, "update-check") == 0) {
        licensing_update *u = NULL;
        rc = licensing_verify_update_answer(c, text, &u);
        outcome_of(o, c, rc);
        if (rc == LICENSING_OK)
            o->output = json_pack("{s:b, s:o, s:b, s:b}", "available", u->available, "version",
                                  text_or_null(u->version), "required", u->required, "rollback", u->rollback);
        licensing_update_free(u);
    } else if (strcmp(kind, "airgap-request") == 0) {
        licensing_set_user_key(c, test_param(v, "userKey"));
        licensing_set_product(c, test_param(v, "productCode"));
        char *code = NULL, *nonce = NULL, *internal_code = NULL, *json = NULL;
        rc = licensing_airgap_request(c, test_param(v, "machineId"), test_param(v, "clientId"), test_param(v, "nonce"),
                                      &code, &nonce);
        outcome_of(o, c, rc);
        if (rc == LICENSING_OK &&
            lic_request_code(c, test_param(v, "userKey"), test_param(v, "machineId"), test_param(v, "clientId"),
                             test_param(v, "nonce"), test_param(v, "productCode"), &internal_code, &json) == 0) {
            o->output = json_pack("{s:s, s:s, s:s}", "requestCode", code, "json", json, "nonce", nonce);
            CHECK(strcmp(code, internal_code) == 0, "the public and internal request codes differ");
        }
        licensing_free(code);
        licensing_free(nonce);
        free(internal_code);
        free(json);
    } else {
        licensing_client_free(c);
        return -1;
    }
    licensing_client_free(c);
    return 0;
}

static const char *main_role(const char *kind) {
    if (strcmp(kind, "jcs") == 0) return "input";
    if (strcmp(kind, "license-file") == 0) return "file";
    if (strcmp(kind, "airgap-response") == 0) return "code";
    if (strcmp(kind, "airgap-request") == 0) return NULL;
    return "answer";
}

static int is_instant(const char *s) {
    return strlen(s) >= 11 && isdigit((unsigned char)s[0]) && isdigit((unsigned char)s[3]) && s[4] == '-' &&
           s[7] == '-' && s[10] == 'T';
}

/* Whether `actual` has every member of `expected` as the README says (instants as instants, null as absent). */
static int matches(const json_t *expected, const json_t *actual, char *why, size_t why_size) {
    const char *key;
    json_t *want;
    json_object_foreach((json_t *)expected, key, want) {
        json_t *got = json_object_get(actual, key);
        int same;
        if (json_is_null(want)) {
            same = !got || json_is_null(got);
        } else if (json_is_string(want) && json_is_string(got) && is_instant(json_string_value(want))) {
            int64_t a = 0, b = 0;
            same = licensing_parse_time(json_string_value(want), &a) == 0 &&
                   licensing_parse_time(json_string_value(got), &b) == 0 && a == b;
        } else if (json_is_number(want)) {
            same = json_is_number(got) && json_number_value(want) == json_number_value(got);
        } else {
            same = got && json_equal(want, got);
        }
        if (!same) {
            char *w = json_dumps(want, JSON_ENCODE_ANY), *g = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;
            snprintf(why, why_size, "%s: expected %s, got %s", key, w ? w : "?", g ? g : "(absent)");
            free(w);
            free(g);
            return 0;
        }
    }
    return 1;
}

int run_vectors(const char *path) {
    char dir[1024];
    json_t *manifest = test_manifest(path, dir, sizeof dir);
    if (!manifest) return 1;
    const char *kinds[] = {"jcs", "validation", "update-check", "license-file", "airgap-request", "airgap-response"};
    int ran[6] = {0}, skipped = 0;
    size_t i;
    json_t *v;
    json_array_foreach(manifest, i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *kind = json_string_value(json_object_get(v, "kind"));
        const char *role = main_role(kind);
        char *text = role ? test_vector_file(dir, v, role) : NULL;
        if (role && !text) {
            CHECK(0, "%s: its %s file cannot be read", name, role);
            continue;
        }
        outcome o;
        if (run_with(dir, v, text ? text : "", &o) != 0) {
            printf("SKIP %s: kind %s is not known to the C client yet\n", name, kind);
            skipped++;
            free(text);
            continue;
        }
        for (int k = 0; k < 6; k++)
            if (strcmp(kinds[k], kind) == 0) ran[k]++;
        json_t *expect = json_object_get(v, "expect");
        const char *error = json_string_value(json_object_get(expect, "error"));
        if (error) {
            CHECK(o.status != LICENSING_OK && strcmp(o.code, error) == 0, "%s: expected the refusal %s, got %s (%s)",
                  name, error, o.status == LICENSING_OK ? "success" : o.code, o.message);
        } else {
            char why[1024] = "";
            CHECK(o.status == LICENSING_OK, "%s: expected success, got %s (%s)", name, o.code, o.message);
            if (o.status == LICENSING_OK)
                CHECK(matches(json_object_get(expect, "output"), o.output, why, sizeof why), "%s: %s", name, why);
        }
        json_decref(o.output);
        free(text);
    }
    for (int k = 0; k < 6; k++) printf("%-16s %d vectors\n", kinds[k], ran[k]);
    if (skipped) printf("skipped %d vectors of unknown kinds\n", skipped);
    json_decref(manifest);
    return 0;
}

/* ---- One byte changed ---- */

/* Runs the vector with `text` in place of its input: must be refused (with `code` when given). */
static void expect_refused(const char *dir, const json_t *v, const char *text, const char *code, const char *what,
                           int *tried) {
    outcome o;
    run_with(dir, v, text, &o);
    (*tried)++;
    const char *name = json_string_value(json_object_get(v, "name"));
    if (code)
        CHECK(o.status != LICENSING_OK && strcmp(o.code, code) == 0, "%s, %s: expected %s, got %s", name, what, code,
              o.status == LICENSING_OK ? "success" : o.code);
    else
        CHECK(o.status != LICENSING_OK, "%s, %s: still verifies", name, what);
    json_decref(o.output);
}

/* A compact JWS with byte `at` of part `part` (0 header, 1 payload, 2 signature) flipped. */
static char *flip_jws(const char *jws, int part, size_t at, size_t *part_len) {
    const char *start = jws;
    for (int p = 0; p < part; p++) start = strchr(start, '.') + 1;
    const char *end = strchr(start, '.');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    unsigned char *bytes;
    size_t n;
    if (lic_b64_decode(start, len, 1, &bytes, &n) != 0) return NULL;
    *part_len = n;
    if (at >= n) {
        free(bytes);
        return NULL;
    }
    bytes[at] ^= 0x01;
    char *encoded = lic_b64url_encode(bytes, n);
    free(bytes);
    char *out = lic_sprintf("%.*s%s%s", (int)(start - jws), jws, encoded, end ? end : "");
    free(encoded);
    return out;
}

static void tamper_jws(const char *dir, const json_t *v, const char *jws, json_t *answer, int *tried) {
    for (int part = 0; part < 3; part++) {
        size_t len = 1;
        for (size_t at = 0; at < len; at++) {
            char *changed = flip_jws(jws, part, at, &len);
            if (!changed) break;
            char what[64];
            snprintf(what, sizeof what, "byte %zu of part %d changed", at, part);
            if (answer) { /* a validation answer: the key inside it */
                json_t *copy = json_deep_copy(answer);
                json_object_set_new(json_object_get(copy, "license"), "licenseKey", json_string(changed));
                char *text = json_dumps(copy, JSON_COMPACT);
                expect_refused(dir, v, text, part == 0 ? NULL : "signature", what, tried);
                free(text);
                json_decref(copy);
            } else {
                expect_refused(dir, v, changed, part == 0 ? NULL : "signature", what, tried);
            }
            free(changed);
        }
    }
}

/* Every leaf of `data` changed in turn (a string's first character, a number + 1, a boolean negated). */
static void tamper_data(const char *dir, const json_t *v, json_t *answer, json_t *node, int *tried) {
    if (json_is_object(node)) {
        const char *key;
        json_t *child;
        json_object_foreach(node, key, child) {
            if (json_is_object(child) || json_is_array(child)) {
                tamper_data(dir, v, answer, child, tried);
                continue;
            }
            json_t *saved = json_incref(child);
            json_t *changed = NULL;
            if (json_is_string(child) && json_string_length(child) > 0) {
                char *s = lic_strdup(json_string_value(child));
                s[0] = (char)(s[0] ^ 0x01);
                if ((unsigned char)s[0] < 0x80 && s[0] >= 0x20) changed = json_string(s);
                free(s);
            } else if (json_is_number(child)) {
                changed = json_real(json_number_value(child) + 1);
            } else if (json_is_boolean(child)) {
                changed = json_boolean(!json_is_true(child));
            }
            if (changed) {
                json_object_set_new(node, key, changed);
                char *text = json_dumps(answer, JSON_COMPACT);
                char what[128];
                snprintf(what, sizeof what, "data member %s changed", key);
                expect_refused(dir, v, text, "signature", what, tried);
                free(text);
                json_object_set(node, key, saved);
            }
            json_decref(saved);
        }
    } else if (json_is_array(node)) {
        for (size_t i = 0; i < json_array_size(node); i++) tamper_data(dir, v, answer, json_array_get(node, i), tried);
    }
}

static void tamper_code(const char *dir, const json_t *v, const char *code, int *tried) {
    size_t len = strlen(code);
    char *compact = malloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (code[i] != '-' && !isspace((unsigned char)code[i])) compact[n++] = (char)toupper((unsigned char)code[i]);
    compact[n] = '\0';
    char prefix[5];
    memcpy(prefix, compact, 4);
    prefix[4] = '\0';
    unsigned char *bytes;
    size_t count;
    if (lic_base32_decode(compact + 4, n - 4, &bytes, &count) != 0 || count <= 4) {
        CHECK(0, "the code of %s does not decode", json_string_value(json_object_get(v, "name")));
        free(compact);
        return;
    }
    size_t payload = count - 4;
    int lrs2 = strcmp(prefix, "LRS2") == 0;
    /* Every byte of the payload, with the checksum made again: the signature (or layout) refuses it. */
    for (size_t at = 0; at < payload; at++) {
        bytes[at] ^= 0x01;
        char *changed = lic_encode_code(prefix, bytes, payload);
        bytes[at] ^= 0x01;
        char what[64];
        snprintf(what, sizeof what, "payload byte %zu changed, checksum recomputed", at);
        expect_refused(dir, v, changed, lrs2 && at >= payload - 64 ? "signature" : NULL, what, tried);
        free(changed);
    }
    /* A character mistyped (not the last, whose low bits may be padding): the checksum refuses it. */
    char *typo = lic_encode_code(prefix, bytes, payload);
    for (size_t i = 5; typo && i + 1 < strlen(typo); i += 3) {
        if (typo[i] == '-') continue;
        char saved = typo[i];
        typo[i] = saved == '7' ? '8' : '7';
        expect_refused(dir, v, typo, "malformed", "a character mistyped", tried);
        typo[i] = saved;
    }
    free(typo);
    free(bytes);
    free(compact);
}

int run_tamper(const char *path) {
    char dir[1024];
    json_t *manifest = test_manifest(path, dir, sizeof dir);
    if (!manifest) return 1;
    size_t i;
    json_t *v;
    int vectors = 0, tried = 0;
    json_array_foreach(manifest, i, v) {
        const char *kind = json_string_value(json_object_get(v, "kind"));
        json_t *expect = json_object_get(v, "expect");
        if (!json_is_true(json_object_get(expect, "ok"))) continue;
        if (strcmp(kind, "validation") != 0 && strcmp(kind, "license-file") != 0 &&
            strcmp(kind, "update-check") != 0 && strcmp(kind, "airgap-response") != 0)
            continue;
        char *text = test_vector_file(dir, v, main_role(kind));
        if (!text) continue;
        vectors++;
        if (strcmp(kind, "validation") == 0) {
            json_t *answer = json_loads(text, 0, NULL);
            const char *key = json_string_value(json_object_get(json_object_get(answer, "license"), "licenseKey"));
            if (key) {
                char *copy = lic_strdup(key);
                tamper_jws(dir, v, copy, answer, &tried);
                free(copy);
            }
            json_decref(answer);
        } else if (strcmp(kind, "license-file") == 0) {
            size_t n = strlen(text);
            while (n > 0 && isspace((unsigned char)text[n - 1])) text[--n] = '\0';
            tamper_jws(dir, v, text, NULL, &tried);
        } else if (strcmp(kind, "update-check") == 0) {
            json_t *answer = json_loads(text, 0, NULL);
            const char *signature = json_string_value(json_object_get(answer, "signature"));
            unsigned char *sig;
            size_t n;
            if (signature && lic_b64_decode(signature, strlen(signature), 0, &sig, &n) == 0) {
                for (size_t at = 0; at < n; at++) {
                    sig[at] ^= 0x01;
                    char *encoded = lic_b64url_encode(sig, n);
                    sig[at] ^= 0x01;
                    json_t *copy = json_deep_copy(answer);
                    json_object_set_new(copy, "signature", json_string(encoded));
                    char *changed = json_dumps(copy, JSON_COMPACT);
                    expect_refused(dir, v, changed, "signature", "a signature byte changed", &tried);
                    free(changed);
                    free(encoded);
                    json_decref(copy);
                }
                free(sig);
            }
            tamper_data(dir, v, answer, json_object_get(answer, "data"), &tried);
            json_decref(answer);
        } else {
            tamper_code(dir, v, text, &tried);
        }
        free(text);
    }
    printf("%d signed vectors, %d changed copies refused\n", vectors, tried);
    CHECK(vectors >= 8, "too few signed vectors to change (%d)", vectors);
    json_decref(manifest);
    return 0;
}

/* ---- Garbage in: a status, never a crash ---- */

static uint32_t next_random(uint32_t *state) {
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

int run_robust(const char *path) {
    char dir[1024];
    json_t *manifest = test_manifest(path, dir, sizeof dir);
    if (!manifest) return 1;
    size_t i;
    json_t *v;
    int tried = 0;
    uint32_t seed = 0x9e3779b9u;
    json_array_foreach(manifest, i, v) {
        const char *kind = json_string_value(json_object_get(v, "kind"));
        const char *role = main_role(kind);
        char *text = role ? test_vector_file(dir, v, role) : NULL;
        if (!text) continue;
        size_t len = strlen(text);
        char *copy = malloc(len + 1);
        /* Every cut (in steps), then random bytes changed, inserted or removed. */
        size_t step = len / 150 + 1;
        for (size_t cut = 0; cut < len; cut += step) {
            memcpy(copy, text, cut);
            copy[cut] = '\0';
            outcome o;
            run_with(dir, v, copy, &o);
            CHECK(o.status >= 0 && o.status <= LICENSING_IO, "a status for a cut input");
            json_decref(o.output);
            tried++;
        }
        for (int round = 0; round < 150; round++) {
            memcpy(copy, text, len + 1);
            int changes = 1 + (int)(next_random(&seed) % 4);
            for (int k = 0; k < changes && len > 0; k++) {
                size_t at = next_random(&seed) % len;
                char ch = (char)(next_random(&seed) % 255 + 1);
                copy[at] = ch;
            }
            outcome o;
            run_with(dir, v, copy, &o);
            CHECK(o.status >= 0 && o.status <= LICENSING_IO, "a status for a changed input");
            json_decref(o.output);
            tried++;
        }
        free(copy);
        free(text);
    }
    printf("%d damaged inputs, each answered with a status\n", tried);
    json_decref(manifest);
    return 0;
}
