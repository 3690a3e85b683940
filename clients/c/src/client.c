/*
 * The client handle, its errors and settings, signing in with the user key, and the licensing operations over REST
 * (CONTRACT sections 4, 5, 11): activate, deactivate, floating seats, checkout, the JWK Set, the signed update check,
 * offline verification and air-gap codes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- Errors ---- */

int lic_fail(licensing_client *c, int status, const char *code, const char *fmt, ...) {
    if (!c) return status;
    c->status = status;
    snprintf(c->code, sizeof c->code, "%s", code ? code : licensing_status_name(status));
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *message = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (message) {
        va_start(ap, fmt);
        vsnprintf(message, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    free(c->message);
    c->message = message;
    return status;
}

void lic_clear(licensing_client *c) {
    if (!c) return;
    c->status = LICENSING_OK;
    c->code[0] = '\0';
    free(c->message);
    c->message = NULL;
    c->http_status = 0;
    c->unreachable = 0;
}

int lic_ok(licensing_client *c) {
    if (!c) return LICENSING_OK;
    c->status = LICENSING_OK;
    c->code[0] = '\0';
    free(c->message);
    c->message = NULL;
    return LICENSING_OK;
}

const char *licensing_version(void) { return LICENSING_VERSION; }

const char *licensing_status_name(int status) {
    static const char *const names[] = {"ok",     "refused", "signature", "unknownKey", "malformed", "expired",
                                        "product", "machine", "nonce",     "clock",      "decrypt",   "grace",
                                        "network", "usage",   "memory",    "io"};
    if (status < 0 || (size_t)status >= sizeof names / sizeof names[0]) return "unknown";
    return names[status];
}

void licensing_free(void *p) { free(p); }

const char *licensing_last_error(const licensing_client *c) {
    if (!c) return "no client";
    return c->message ? c->message : "";
}

const char *licensing_last_code(const licensing_client *c) {
    if (!c) return "usage";
    return c->code;
}

int licensing_last_http_status(const licensing_client *c) { return c ? c->http_status : 0; }

#define NEED_CLIENT(c)                                                                                               \
    do {                                                                                                             \
        if (!(c)) return LICENSING_INVALID_ARGUMENT;                                                                 \
        lic_clear(c);                                                                                                \
    } while (0)

#define USAGE(c, ...) lic_fail((c), LICENSING_INVALID_ARGUMENT, "usage", __VA_ARGS__)
#define NO_MEMORY(c) lic_fail((c), LICENSING_NO_MEMORY, "memory", "Out of memory")

/* ---- The handle ---- */

int licensing_client_new(const char *base_url, licensing_client **out) {
    if (!out) return LICENSING_INVALID_ARGUMENT;
    *out = NULL;
    licensing_client *c = calloc(1, sizeof *c);
    if (!c) return LICENSING_NO_MEMORY;
    c->timeout_ms = LIC_DEFAULT_TIMEOUT_MS;
    if (!lic_empty(base_url)) {
        if (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0) {
            free(c);
            return LICENSING_INVALID_ARGUMENT;
        }
        c->base_url = lic_strdup(base_url);
        if (!c->base_url) {
            free(c);
            return LICENSING_NO_MEMORY;
        }
        size_t n = strlen(c->base_url);
        while (n > 0 && c->base_url[n - 1] == '/') c->base_url[--n] = '\0';
    }
    *out = c;
    return LICENSING_OK;
}

void licensing_client_free(licensing_client *c) {
    if (!c) return;
    lic_http_cleanup(c);
    free(c->base_url);
    free(c->user_key);
    free(c->product);
    free(c->app_version);
    free(c->state_dir);
    free(c->ca_file);
    free(c->install_id);
    json_decref(c->trusted_keys);
    json_decref(c->keys);
    free(c->session_token);
    free(c->run_session_id);
    free(c->run_version);
    free(c->run_platform);
    free(c->message);
    free(c);
}

static int set_text(licensing_client *c, char **slot, const char *value) {
    NEED_CLIENT(c);
    char *copy = NULL;
    if (!lic_empty(value)) {
        if (!lic_utf8_valid(value, strlen(value))) return USAGE(c, "The text is not valid UTF-8");
        copy = lic_strdup(value);
        if (!copy) return NO_MEMORY(c);
    }
    free(*slot);
    *slot = copy;
    return LICENSING_OK;
}

int licensing_set_user_key(licensing_client *c, const char *user_key) {
    int rc = set_text(c, c ? &c->user_key : NULL, user_key);
    if (rc == LICENSING_OK) { /* another license: sign in again */
        free(c->session_token);
        c->session_token = NULL;
    }
    return rc;
}

int licensing_set_product(licensing_client *c, const char *product) {
    return set_text(c, c ? &c->product : NULL, product);
}

int licensing_set_app_version(licensing_client *c, const char *version) {
    return set_text(c, c ? &c->app_version : NULL, version);
}

int licensing_set_install_id(licensing_client *c, const char *id) {
    return set_text(c, c ? &c->install_id : NULL, id);
}

int licensing_set_ca_file(licensing_client *c, const char *path) { return set_text(c, c ? &c->ca_file : NULL, path); }

int licensing_set_state_dir(licensing_client *c, const char *dir) {
    NEED_CLIENT(c);
    if (!lic_empty(dir) && lic_mkdirs(dir) != 0)
        return lic_fail(c, LICENSING_IO, "io", "The state directory %s cannot be made", dir);
    int rc = set_text(c, &c->state_dir, dir);
    /* Keys kept in another directory are not this one's. */
    if (rc == LICENSING_OK && !c->keys_fetched_at) {
        json_decref(c->keys);
        c->keys = NULL;
    }
    return rc;
}

int licensing_set_timeout_ms(licensing_client *c, long timeout_ms) {
    NEED_CLIENT(c);
    if (timeout_ms <= 0) return USAGE(c, "The timeout must be positive");
    c->timeout_ms = timeout_ms;
    return LICENSING_OK;
}

int licensing_set_clock(licensing_client *c, int64_t now_ms) {
    NEED_CLIENT(c);
    c->clock_ms = now_ms;
    return LICENSING_OK;
}

static int is_jwks(const json_t *v) { return json_is_object(v) && json_is_array(json_object_get(v, "keys")); }

int licensing_set_trusted_keys(licensing_client *c, const char *jwks_json) {
    NEED_CLIENT(c);
    json_decref(c->trusted_keys);
    c->trusted_keys = NULL;
    if (lic_empty(jwks_json)) return LICENSING_OK;
    json_t *keys = lic_json_parse(jwks_json, strlen(jwks_json));
    if (!is_jwks(keys)) {
        json_decref(keys);
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The trusted keys are not a JWK Set ({\"keys\": [...]})");
    }
    c->trusted_keys = keys;
    return LICENSING_OK;
}

/* ---- Signing in and calling ---- */

static int answer_object(licensing_client *c, const char *what, lic_response *r) {
    if (r->status < 200 || r->status >= 300) return lic_refusal(c, what, r);
    if (!json_is_object(r->json)) {
        /* Not the service's answer (a proxy's or captive portal's page): as good as unreachable. */
        c->unreachable = 1;
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The answer to %s (HTTP %ld) is not the service's JSON",
                        what, r->status);
    }
    json_t *success = json_object_get(r->json, "success");
    if (json_is_false(success))
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "%s answered success:false with a 2xx status", what);
    return LICENSING_OK;
}

static int sign_in(licensing_client *c, int renew) {
    if (!renew && c->session_token && lic_real_now_ms() < c->session_renew_at) return LICENSING_OK;
    json_t *body = json_pack("{s:s}", "userKey", c->user_key);
    char *text = body ? lic_json_dump(body) : NULL;
    json_decref(body);
    if (!text) return NO_MEMORY(c);
    lic_response r;
    int rc = lic_http(c, "POST", "/v1/auth/login", NULL, text, &r);
    free(text);
    if (rc == LICENSING_OK) rc = answer_object(c, "sign-in", &r);
    if (rc == LICENSING_OK) {
        const char *token = lic_jstr(r.json, "token");
        double expires_in = 0;
        if (!token) {
            rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The sign-in answer has no token");
        } else {
            lic_jopt_num(r.json, "expiresIn", &expires_in);
            int64_t lifetime = (int64_t)(expires_in * 1000);
            int64_t early = lifetime / 10 < 60000 ? lifetime / 10 : 60000;
            free(c->session_token);
            c->session_token = lic_strdup(token);
            /* Renewed a tenth of its lifetime early (at most a minute): no request carries a token expiring in flight. */
            c->session_renew_at = lic_real_now_ms() + lifetime - early;
            if (!c->session_token) rc = NO_MEMORY(c);
        }
    }
    lic_response_free(&r);
    return rc;
}

int lic_call(licensing_client *c, const char *path, json_t *body, const char *const *extra_headers,
             lic_response *res) {
    memset(res, 0, sizeof *res);
    if (lic_empty(c->user_key))
        return USAGE(c, "A user key is required: licensing_set_user_key (the client signs in with it)");
    if (!c->base_url) return USAGE(c, "This client has no service address");
    char *text = lic_json_dump(body);
    if (!text) return NO_MEMORY(c);
    int rc = LICENSING_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = sign_in(c, attempt > 0);
        if (rc != LICENSING_OK) break;
        const char *headers[12];
        size_t n = 0;
        char *auth = lic_sprintf("Authorization: Bearer %s", c->session_token);
        if (!auth) {
            rc = NO_MEMORY(c);
            break;
        }
        headers[n++] = auth;
        for (size_t i = 0; extra_headers && extra_headers[i] && n < 11; i++) headers[n++] = extra_headers[i];
        headers[n] = NULL;
        rc = lic_http(c, "POST", path, headers, text, res);
        free(auth);
        if (rc != LICENSING_OK) break;
        /* A session token the service refused (expired early, signed out): signed in again, once. */
        if (res->status == 401 && attempt == 0) {
            lic_response_free(res);
            continue;
        }
        rc = answer_object(c, path, res);
        break;
    }
    free(text);
    if (rc != LICENSING_OK) lic_response_free(res);
    return rc;
}

/* Adds a string member when the value is given. */
static void put_str(json_t *o, const char *key, const char *value) {
    if (!lic_empty(value)) json_object_set_new(o, key, json_string(value));
}

static int check_text(licensing_client *c, const char *name, const char *value, int required) {
    if (lic_empty(value)) return required ? USAGE(c, "%s is required", name) : LICENSING_OK;
    if (!lic_utf8_valid(value, strlen(value))) return USAGE(c, "%s is not valid UTF-8", name);
    return LICENSING_OK;
}

/* ---- Results ---- */

static int64_t date_member(const json_t *o, const char *key) {
    int64_t ms = 0;
    return lic_jopt_date(o, key, &ms) == 1 ? ms : 0;
}

static int int_member(const json_t *o, const char *key) {
    double d = 0;
    return lic_jopt_num(o, key, &d) == 1 ? (int)d : 0;
}

static int grant_of(licensing_client *c, lic_response *r, licensing_grant **out) {
    if (!out) return lic_ok(c);
    licensing_grant *g = calloc(1, sizeof *g);
    if (!g) return NO_MEMORY(c);
    json_t *o = r->json, *license = json_object_get(o, "license");
    const char *id = lic_jstr(o, "licenseId");
    if (!id) id = lic_jstr(license, "licenseId");
    g->license_id = lic_strdup(id);
    g->license_token = lic_strdup(lic_jstr(o, "licenseToken"));
    g->token_expire_at = date_member(o, "tokenExpireAt");
    g->active_client_count = int_member(o, "activeClientCount");
    g->max_client_count = int_member(o, "maxClientCount");
    g->heartbeat_interval = int_member(o, "heartbeatInterval");
    g->license_key = lic_strdup(lic_jstr(license, "licenseKey"));
    g->answer_json = lic_strdup(r->body);
    *out = g;
    return lic_ok(c);
}

void licensing_grant_free(licensing_grant *g) {
    if (!g) return;
    free(g->license_id);
    free(g->license_token);
    free(g->license_key);
    free(g->answer_json);
    free(g);
}

void licensing_validation_free(licensing_validation *v) {
    if (!v) return;
    licensing_license_free(v->license);
    free(v->license_token);
    free(v->answer_json);
    free(v);
}

/* ---- Operations ---- */

int licensing_activate(licensing_client *c, const char *machine_id, const char *client_id, licensing_grant **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    int rc = check_text(c, "machine_id", machine_id, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "client_id", client_id, 0);
    if (rc != LICENSING_OK) return rc;
    json_t *body = json_object();
    put_str(body, "userKey", c->user_key);
    put_str(body, "machineId", machine_id);
    put_str(body, "clientId", client_id);
    put_str(body, "productCode", c->product);
    put_str(body, "version", c->app_version);
    lic_response r;
    rc = lic_call(c, "/v1/license/activate", body, NULL, &r);
    json_decref(body);
    if (rc != LICENSING_OK) return rc;
    if (!lic_jstr(r.json, "licenseToken") || !json_is_object(json_object_get(r.json, "license")))
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The activate answer has no licenseToken or license");
    else
        rc = grant_of(c, &r, out);
    lic_response_free(&r);
    return rc;
}

int licensing_deactivate(licensing_client *c, const char *machine_id, const char *client_id, licensing_grant **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    int rc = check_text(c, "machine_id", machine_id, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "client_id", client_id, 0);
    if (rc != LICENSING_OK) return rc;
    json_t *body = json_object();
    put_str(body, "userKey", c->user_key);
    put_str(body, "machineId", machine_id);
    put_str(body, "clientId", client_id);
    lic_response r;
    rc = lic_call(c, "/v1/license/deactivate", body, NULL, &r);
    json_decref(body);
    if (rc != LICENSING_OK) return rc;
    rc = grant_of(c, &r, out);
    lic_response_free(&r);
    return rc;
}

int licensing_seat_request(licensing_client *c, const char *machine_id, const char *client_id,
                           licensing_grant **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    int rc = check_text(c, "machine_id", machine_id, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "client_id", client_id, 1);
    if (rc != LICENSING_OK) return rc;
    json_t *body = json_object();
    put_str(body, "userKey", c->user_key);
    put_str(body, "machineId", machine_id);
    put_str(body, "clientId", client_id);
    lic_response r;
    rc = lic_call(c, "/v1/license/request", body, NULL, &r);
    json_decref(body);
    if (rc != LICENSING_OK) return rc;
    if (!lic_jstr(r.json, "licenseToken"))
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The seat request answer has no licenseToken");
    else
        rc = grant_of(c, &r, out);
    lic_response_free(&r);
    return rc;
}

int licensing_seat_heartbeat(licensing_client *c, const char *license_token, licensing_grant **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    int rc = check_text(c, "license_token", license_token, 1);
    if (rc != LICENSING_OK) return rc;
    json_t *body = json_object();
    put_str(body, "licenseToken", license_token);
    lic_response r;
    rc = lic_call(c, "/v1/license/heartbeat", body, NULL, &r);
    json_decref(body);
    if (rc != LICENSING_OK) return rc;
    rc = grant_of(c, &r, out);
    lic_response_free(&r);
    return rc;
}

int licensing_seat_release(licensing_client *c, const char *license_token, licensing_grant **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    int rc = check_text(c, "license_token", license_token, 1);
    if (rc != LICENSING_OK) return rc;
    json_t *body = json_object();
    put_str(body, "licenseToken", license_token);
    put_str(body, "userKey", c->user_key);
    lic_response r;
    rc = lic_call(c, "/v1/license/release", body, NULL, &r);
    json_decref(body);
    if (rc != LICENSING_OK) return rc;
    rc = grant_of(c, &r, out);
    lic_response_free(&r);
    return rc;
}

int licensing_checkout(licensing_client *c, const char *machine_id, const char *client_id, int encrypt,
                       char **license_file, int64_t *expires_at) {
    NEED_CLIENT(c);
    if (license_file) *license_file = NULL;
    if (!license_file) return USAGE(c, "licensing_checkout: license_file is required");
    int rc = check_text(c, "machine_id", machine_id, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "client_id", client_id, 0);
    if (rc != LICENSING_OK) return rc;
    json_t *body = json_object();
    put_str(body, "userKey", c->user_key);
    put_str(body, "machineId", machine_id);
    put_str(body, "clientId", client_id);
    if (encrypt) json_object_set_new(body, "encrypt", json_true());
    lic_response r;
    rc = lic_call(c, "/v1/license/checkout", body, NULL, &r);
    json_decref(body);
    if (rc != LICENSING_OK) return rc;
    const char *file = lic_jstr(r.json, "licenseFile");
    int64_t ends = 0;
    if (!file || lic_jopt_date(r.json, "expiresAt", &ends) != 1) {
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The checkout answer has no licenseFile or expiresAt");
    } else {
        *license_file = lic_strdup(file);
        if (expires_at) *expires_at = ends;
        rc = *license_file ? lic_ok(c) : NO_MEMORY(c);
    }
    lic_response_free(&r);
    return rc;
}

/* ---- The JWK Set ---- */

static int fetch_keys(licensing_client *c, char **text_out) {
    if (!c->base_url)
        return lic_fail(c, LICENSING_UNKNOWN_KEY, "unknownKey",
                        "No JWK Set to verify with: pin one (licensing_set_trusted_keys), keep one in the state "
                        "directory (jwks.json), or give the client the service's address");
    lic_response r;
    int rc = lic_http(c, "GET", "/v1/extensions/keys", NULL, NULL, &r);
    if (rc != LICENSING_OK) return rc;
    if (r.status < 200 || r.status >= 300) {
        rc = lic_refusal(c, "GET /v1/extensions/keys", &r);
    } else if (!is_jwks(r.json)) {
        c->unreachable = 1;
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "GET /v1/extensions/keys did not answer a JWK Set");
    } else {
        json_decref(c->keys);
        c->keys = json_incref(r.json);
        c->keys_fetched_at = lic_real_now_ms();
        if (c->state_dir) {
            char *path = lic_path_join(c->state_dir, LIC_JWKS_FILE);
            if (path) lic_write_file_atomic(path, r.body, r.len);
            free(path);
        }
        if (text_out) {
            *text_out = lic_strdup(r.body);
            if (!*text_out) rc = NO_MEMORY(c);
        }
    }
    lic_response_free(&r);
    return rc;
}

int lic_resolve_keys(licensing_client *c, int may_fetch, const json_t **jwks) {
    *jwks = NULL;
    if (c->trusted_keys) {
        *jwks = c->trusted_keys;
        return LICENSING_OK;
    }
    if (!c->keys && c->state_dir) {
        char *path = lic_path_join(c->state_dir, LIC_JWKS_FILE), *text = NULL;
        size_t len = 0;
        if (path && lic_read_file(path, &text, &len) == 0) {
            json_t *kept = lic_json_parse(text, len);
            if (is_jwks(kept))
                c->keys = kept;
            else
                json_decref(kept);
        }
        free(path);
        free(text);
    }
    if (!c->keys) {
        if (!may_fetch)
            return lic_fail(c, LICENSING_UNKNOWN_KEY, "unknownKey",
                            "No JWK Set is pinned or kept in the state directory");
        int rc = fetch_keys(c, NULL);
        if (rc != LICENSING_OK) return rc;
    }
    *jwks = c->keys;
    return LICENSING_OK;
}

/* Whether the keys in hand should be fetched again for `kid`: not pinned, the kid unknown, and not fetched in the last
   minute (a kid that no key has cannot make the client hammer the service). */
static int refetch_for(licensing_client *c, const json_t *jwks, const char *kid) {
    lic_key key;
    if (c->trusted_keys || !kid || !c->base_url || lic_keys_named(jwks, kid, &key, 1) > 0) return 0;
    return c->keys_fetched_at == 0 || lic_real_now_ms() - c->keys_fetched_at > 60000;
}

int lic_keys_for_kid(licensing_client *c, const char *kid, int may_fetch, const json_t **jwks) {
    int rc = lic_resolve_keys(c, may_fetch, jwks);
    if (rc != LICENSING_OK || !may_fetch || !refetch_for(c, *jwks, kid)) return rc;
    /* A kid the kept keys do not have: the service rotated its keys; fetch them again. */
    rc = fetch_keys(c, NULL);
    if (rc != LICENSING_OK) return rc;
    *jwks = c->keys;
    return LICENSING_OK;
}

int licensing_fetch_keys(licensing_client *c, int refresh, char **jwks_json) {
    NEED_CLIENT(c);
    if (jwks_json) *jwks_json = NULL;
    if (!refresh && c->keys) {
        if (jwks_json) {
            *jwks_json = lic_json_dump(c->keys);
            if (!*jwks_json) return NO_MEMORY(c);
        }
        return LICENSING_OK;
    }
    int rc = fetch_keys(c, jwks_json);
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}

/* ---- Offline verification ---- */

static int verify_with(licensing_client *c, const char *text, const licensing_check *check, int kind,
                       licensing_license **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    if (!text) return USAGE(c, "Nothing to verify");
    lic_params p;
    lic_params_of(c, check, &p);
    if ((kind == 1 || kind == 3) && lic_empty(p.machine_id))
        return USAGE(c, "check->machine_id is required to verify a license file or response code");
    if (kind == 3 && !p.nonce) return USAGE(c, "check->nonce (the request's) is required to verify a response");
    const json_t *jwks;
    int rc = lic_resolve_keys(c, 1, &jwks);
    if (rc != LICENSING_OK) return rc;
    json_t *answer = NULL;
    const char *key = text;
    if (kind == 2) { /* a validation answer: its license key */
        answer = lic_json_parse(text, strlen(text));
        json_t *license = json_object_get(answer, "license");
        key = json_is_object(answer) && json_is_object(license) ? lic_jstr(license, "licenseKey") : NULL;
        if (!key) {
            json_decref(answer);
            return lic_fail(c, LICENSING_MALFORMED, "malformed", "The validation answer carries no license key");
        }
    }
    /* Signed by a key the kept ones do not have (rotated since): fetched again when the service can be reached; when
       it cannot, the verification below refuses with unknownKey. */
    char *kid = lic_jws_kid(key);
    if (refetch_for(c, jwks, kid) && fetch_keys(c, NULL) == LICENSING_OK) jwks = c->keys;
    free(kid);
    if (kind == 1 || kind == 3)
        rc = lic_verify_license_file(c, key, jwks, &p, out);
    else
        rc = lic_verify_license_key(c, key, jwks, &p, out);
    json_decref(answer);
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}

int licensing_verify_license_file(licensing_client *c, const char *text, const licensing_check *check,
                                  licensing_license **out) {
    return verify_with(c, text, check, 1, out);
}

int licensing_verify_license_key(licensing_client *c, const char *key, const licensing_check *check,
                                 licensing_license **out) {
    return verify_with(c, key, check, 0, out);
}

int licensing_verify_validation_answer(licensing_client *c, const char *answer_json, const licensing_check *check,
                                       licensing_license **out) {
    return verify_with(c, answer_json, check, 2, out);
}

int licensing_airgap_verify(licensing_client *c, const char *response, const licensing_check *check,
                            licensing_license **out) {
    return verify_with(c, response, check, 3, out);
}

int licensing_verify_update_answer(licensing_client *c, const char *answer_json, licensing_update **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    if (!answer_json) return USAGE(c, "Nothing to verify");
    json_t *answer = lic_json_parse(answer_json, strlen(answer_json));
    if (!json_is_object(answer)) {
        json_decref(answer);
        return lic_fail(c, LICENSING_MALFORMED, "malformed", "The update check is not a JSON object");
    }
    const json_t *jwks;
    int rc = lic_resolve_keys(c, 1, &jwks);
    if (rc == LICENSING_OK) rc = lic_verify_update(c, answer, jwks, out);
    json_decref(answer);
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}

/* ---- The signed update check ---- */

int licensing_check_update(licensing_client *c, const char *version, const char *platform, const char *channel,
                           licensing_update **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    int rc = check_text(c, "version", version, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "platform", platform, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "the product (licensing_set_product)", c->product, 1);
    if (rc != LICENSING_OK) return rc;
    char *product = lic_url_escape(c, c->product), *v = lic_url_escape(c, version), *pl = lic_url_escape(c, platform);
    char *ch = lic_empty(channel) ? NULL : lic_url_escape(c, channel);
    char *path = product && v && pl ? lic_sprintf("/v1/updates/%s?platform=%s&version=%s%s%s", product, pl, v,
                                                  ch ? "&channel=" : "", ch ? ch : "")
                                    : NULL;
    char *user = c->user_key ? lic_sprintf("X-Service-User-Key: %s", c->user_key) : NULL;
    char *install = c->install_id ? lic_sprintf("X-Service-Install-Id: %s", c->install_id) : NULL;
    free(product);
    free(v);
    free(pl);
    free(ch);
    const char *headers[3] = {NULL, NULL, NULL};
    size_t n = 0;
    if (user) headers[n++] = user;
    if (install) headers[n++] = install;
    lic_response r;
    memset(&r, 0, sizeof r);
    if (!path) {
        rc = NO_MEMORY(c);
    } else {
        rc = lic_http(c, "GET", path, headers, NULL, &r);
    }
    free(path);
    free(user);
    free(install);
    if (rc != LICENSING_OK) return rc;
    if (r.status == 204) { /* nothing installable: nothing signed */
        licensing_update *u = calloc(1, sizeof *u);
        if (!u) rc = NO_MEMORY(c);
        if (u && out)
            *out = u;
        else
            licensing_update_free(u);
    } else if (r.status < 200 || r.status >= 300) {
        rc = lic_refusal(c, "The update check", &r);
    } else if (!json_is_object(r.json)) {
        c->unreachable = 1;
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed", "The update check is not the service's JSON");
    } else {
        const json_t *jwks;
        rc = lic_keys_for_kid(c, lic_jstr(r.json, "keyId"), 1, &jwks);
        if (rc == LICENSING_OK) rc = lic_verify_update(c, r.json, jwks, out);
    }
    lic_response_free(&r);
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}

/* ---- Air-gapped request ---- */

int licensing_airgap_request(licensing_client *c, const char *machine_id, const char *client_id, const char *nonce,
                             char **request_code, char **nonce_out) {
    NEED_CLIENT(c);
    if (request_code) *request_code = NULL;
    if (nonce_out) *nonce_out = NULL;
    if (!request_code) return USAGE(c, "licensing_airgap_request: request_code is required");
    int rc = check_text(c, "machine_id", machine_id, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "the user key (licensing_set_user_key)", c->user_key, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "client_id", client_id, 0);
    if (rc == LICENSING_OK) rc = check_text(c, "nonce", nonce, 0);
    if (rc != LICENSING_OK) return rc;
    char *fresh = NULL;
    if (lic_empty(nonce)) {
        if (lic_random_hex(16, &fresh) != 0) return NO_MEMORY(c);
        nonce = fresh;
    }
    rc = lic_request_code(c, c->user_key, machine_id, client_id, nonce, c->product, request_code, NULL);
    if (rc == LICENSING_OK && nonce_out) {
        *nonce_out = lic_strdup(nonce);
        if (!*nonce_out) {
            free(*request_code);
            *request_code = NULL;
            rc = NO_MEMORY(c);
        }
    }
    free(fresh);
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}

/* ---- Validate ---- */

int licensing_validate(licensing_client *c, const char *machine_id, const char *client_id,
                       licensing_validation **out) {
    NEED_CLIENT(c);
    if (out) *out = NULL;
    int rc = check_text(c, "machine_id", machine_id, 1);
    if (rc == LICENSING_OK) rc = check_text(c, "client_id", client_id, 0);
    if (rc != LICENSING_OK) return rc;
    if (c->state_dir) rc = lic_grace_validate(c, machine_id, client_id, out);
    else rc = lic_online_validate(c, machine_id, client_id, out);
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}
