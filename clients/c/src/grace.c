/*
 * Validation, and offline grace (CONTRACT section 11): a license that validated online stays usable for the
 * `offlineGraceDays` the service signed into the validation's license key while the service cannot be reached.
 *
 * The state directory keeps licensing-validation.json: {v: 1, machineId, licenseKey, lastSeen, refused?}. Only the
 * license key is trusted, through its signature against the pinned or kept JWK Set (jwks.json beside it); the grace
 * counts from its signed `iat`; a clock set back (before that, or before the latest time seen) is refused; a refusal
 * by the service (revoked, expired, deactivated) replaces what is kept, so the grace ends at the first validation
 * that reaches the service.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* When a verified key's offline use ends: iat + offlineGraceDays; a Floating key's at its lease (exp) too. */
static int64_t grace_until(const licensing_license *l) {
    if (l->offline_grace_days <= 0) return 0; /* no grace: offline, nothing is usable */
    int64_t until = l->issued_at + (int64_t)l->offline_grace_days * LIC_DAY_MS;
    if (l->licensing_mode && strcmp(l->licensing_mode, "Floating") == 0 && l->expires_at != 0 && l->expires_at < until)
        until = l->expires_at;
    return until;
}

/* Validates online and verifies the answer's license key; `key_text` (may be NULL) receives the key. */
static int online(licensing_client *c, const char *machine_id, const char *client_id, licensing_validation **out,
                  char **key_text) {
    char *nonce = NULL;
    if (lic_random_hex(16, &nonce) != 0) return lic_fail(c, LICENSING_NO_MEMORY, "memory", "No random nonce");
    json_t *body = json_object();
    json_object_set_new(body, "userKey", json_string(c->user_key ? c->user_key : ""));
    json_object_set_new(body, "machineId", json_string(machine_id));
    if (!lic_empty(client_id)) json_object_set_new(body, "clientId", json_string(client_id));
    if (c->product) json_object_set_new(body, "productCode", json_string(c->product));
    if (c->app_version) json_object_set_new(body, "version", json_string(c->app_version));
    json_object_set_new(body, "nonce", json_string(nonce));
    char *install = c->install_id ? lic_sprintf("X-Service-Install-Id: %s", c->install_id) : NULL;
    const char *headers[2] = {install, NULL};
    lic_response r;
    int rc = lic_call(c, "/v1/license/validate", body, headers, &r);
    json_decref(body);
    free(install);
    if (rc != LICENSING_OK) {
        free(nonce);
        return rc;
    }
    licensing_license *lic = NULL;
    const char *key = lic_jstr(json_object_get(r.json, "license"), "licenseKey");
    if (!key) {
        rc = lic_fail(c, LICENSING_MALFORMED, "malformed",
                      "The validation answer carries no signed license key for this machine: it proves nothing");
    } else {
        char *kid = lic_jws_kid(key);
        const json_t *jwks;
        rc = lic_keys_for_kid(c, kid, 1, &jwks);
        free(kid);
        if (rc == LICENSING_OK) {
            lic_params p = {0};
            p.machine_id = machine_id;
            p.product_code = c->product;
            p.nonce = nonce;
            p.now = lic_now_ms(c);
            rc = lic_verify_license_key(c, key, jwks, &p, &lic);
        }
    }
    if (rc == LICENSING_OK) {
        licensing_validation *v = calloc(1, sizeof *v);
        if (!v) {
            rc = lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
        } else {
            v->license = lic;
            lic = NULL;
            v->offline = 0;
            v->validated_at = v->license->issued_at;
            v->grace_until = grace_until(v->license);
            v->license_token = lic_strdup(lic_jstr(r.json, "licenseToken"));
            v->answer_json = lic_strdup(r.body);
            if (key_text) *key_text = lic_strdup(key);
            if (out)
                *out = v;
            else
                licensing_validation_free(v);
        }
    }
    licensing_license_free(lic);
    lic_response_free(&r);
    free(nonce);
    return rc;
}

int lic_online_validate(licensing_client *c, const char *machine_id, const char *client_id,
                        licensing_validation **out) {
    return online(c, machine_id, client_id, out, NULL);
}

/* ---- The kept validation ---- */

static json_t *load(licensing_client *c) {
    char *path = lic_path_join(c->state_dir, LIC_VALIDATION_FILE), *text = NULL;
    size_t len = 0;
    json_t *kept = NULL;
    if (path && lic_read_file(path, &text, &len) == 0) kept = lic_json_parse(text, len);
    free(path);
    free(text);
    if (!json_is_object(kept)) {
        json_decref(kept);
        kept = json_object();
    }
    return kept;
}

/* Writes `kept` with lastSeen raised to now. */
static void save(licensing_client *c, json_t *kept, int64_t now) {
    int64_t last = 0;
    if (lic_jopt_date(kept, "lastSeen", &last) != 1 || now > last) {
        char iso[32];
        lic_format_iso(now, iso);
        json_object_set_new(kept, "lastSeen", json_string(iso));
    }
    json_object_set_new(kept, "v", json_integer(1));
    char *text = lic_json_dump(kept);
    char *path = lic_path_join(c->state_dir, LIC_VALIDATION_FILE);
    if (text && path) lic_write_file_atomic(path, text, strlen(text));
    free(text);
    free(path);
}

/* A fresh record for the machine, keeping the latest time seen. */
static json_t *record_for(const json_t *old, const char *machine_id) {
    json_t *kept = json_object();
    json_object_set_new(kept, "v", json_integer(1));
    json_object_set_new(kept, "machineId", json_string(machine_id));
    json_t *last = json_object_get(old, "lastSeen");
    if (json_is_string(last)) json_object_set(kept, "lastSeen", last);
    return kept;
}

/* Whether the service judged the license (a licensing refusal 520-535, or a refused credential 401). */
static int judged(const licensing_client *c) {
    return c->status == LICENSING_REFUSED && !c->unreachable &&
           (c->http_status == 401 || (c->http_status >= 520 && c->http_status <= 535));
}

static int offline(licensing_client *c, json_t *kept, const char *machine_id, int64_t now,
                   licensing_validation **out) {
    char *cause = lic_strdup(c->message ? c->message : "the service cannot be reached");
    const char *kept_machine = lic_jstr(kept, "machineId");
    int same_machine = kept_machine && strcmp(kept_machine, machine_id) == 0;
    json_t *refused = json_object_get(kept, "refused");
    int rc;
    licensing_license *lic = NULL;
    char a[32], b[32];
    if (same_machine && json_is_object(refused)) {
        const char *reason = lic_jstr(refused, "reason"), *message = lic_jstr(refused, "message");
        rc = lic_fail(c, reason ? LICENSING_REFUSED : LICENSING_GRACE, reason ? reason : "grace",
                      "The licensing service cannot be reached (%s), and at the last validation it refused the "
                      "license (%s): it cannot be used offline", cause, message ? message : "refused");
        goto done;
    }
    const char *key = same_machine ? lic_jstr(kept, "licenseKey") : NULL;
    int64_t iat = key ? lic_jws_iat_ms(key) : -1;
    const json_t *jwks = NULL;
    rc = LICENSING_GRACE;
    if (key && iat >= 0 && lic_resolve_keys(c, 0, &jwks) == LICENSING_OK) {
        /* Checked as of its own issue: signature, machine and product; the grace decides how long it lasts. */
        lic_params p = {0};
        p.machine_id = machine_id;
        p.product_code = c->product;
        p.now = iat;
        rc = lic_verify_license_key(c, key, jwks, &p, &lic);
    }
    if (rc != LICENSING_OK) {
        rc = lic_fail(c, LICENSING_GRACE, "grace",
                      "The licensing service cannot be reached (%s), and the license was never validated online on "
                      "this machine: connect once to use it offline", cause);
        goto done;
    }
    int64_t last_seen = 0;
    int has_last = lic_jopt_date(kept, "lastSeen", &last_seen) == 1;
    if (now + LIC_CLOCK_SKEW_MS < lic->issued_at || (has_last && now + LIC_CLOCK_SKEW_MS < last_seen)) {
        lic_format_iso(now, a);
        rc = lic_fail(c, LICENSING_CLOCK, "clock",
                      "The computer's clock (%s) is earlier than the last validation or the last time this "
                      "application ran: the clock was set back", a);
        goto done;
    }
    if (lic->license_expire_at != 0 && lic->license_expire_at <= now) {
        lic_format_iso(lic->license_expire_at, a);
        rc = lic_fail(c, LICENSING_EXPIRED, "expired", "The license expired at %s", a);
        goto done;
    }
    int64_t until = grace_until(lic);
    if (now >= until) {
        lic_format_iso(lic->issued_at, a);
        lic_format_iso(until, b);
        rc = lic_fail(c, LICENSING_GRACE, "grace",
                      "The licensing service cannot be reached (%s), and the license's %d days of offline use after "
                      "its last validation (%s) ended at %s: connect to validate it", cause, lic->offline_grace_days,
                      a, b);
        goto done;
    }
    save(c, kept, now);
    licensing_validation *v = calloc(1, sizeof *v);
    if (!v) {
        rc = lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
        goto done;
    }
    v->license = lic;
    lic = NULL;
    v->offline = 1;
    v->validated_at = v->license->issued_at;
    v->grace_until = until;
    if (out)
        *out = v;
    else
        licensing_validation_free(v);
    rc = LICENSING_OK;
done:
    licensing_license_free(lic);
    free(cause);
    return rc;
}

int lic_grace_validate(licensing_client *c, const char *machine_id, const char *client_id,
                       licensing_validation **out) {
    json_t *kept = load(c);
    char *key = NULL;
    int rc = online(c, machine_id, client_id, out, &key);
    int64_t now = lic_now_ms(c);
    if (rc == LICENSING_OK) {
        json_t *fresh = record_for(kept, machine_id);
        if (key) json_object_set_new(fresh, "licenseKey", json_string(key));
        save(c, fresh, now);
        json_decref(fresh);
    } else if (judged(c)) {
        /* The service judged the license: whatever was kept no longer counts. */
        json_t *fresh = record_for(kept, machine_id);
        char iso[32];
        lic_format_iso(now, iso);
        json_object_set_new(fresh, "refused",
                            json_pack("{s:s, s:s, s:s}", "message", c->message ? c->message : "", "reason", c->code,
                                      "at", iso));
        save(c, fresh, now);
        json_decref(fresh);
    } else if (c->unreachable) {
        rc = offline(c, kept, machine_id, now, out);
    }
    free(key);
    json_decref(kept);
    return rc;
}
