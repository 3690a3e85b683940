/*
 * Session pings (CONTRACT section 13): each run of the application is a session (started, then exited, crashed or
 * abnormal) sent to POST /v1/updates/{product}/sessions, so the service measures crash-free sessions per release and
 * halts a rollout that crashes. Sessions wait in the state directory (licensing-sessions.json) until the service has
 * taken them: a crash is written at once and sent with the next start; offline, they wait.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_KEPT 500
#define BATCH 100

static int valid_status(const char *s) {
    return s && (strcmp(s, "started") == 0 || strcmp(s, "exited") == 0 || strcmp(s, "crashed") == 0 ||
                 strcmp(s, "abnormal") == 0);
}

int licensing_install_id(licensing_client *c, char **install_id) {
    if (!c) return LICENSING_INVALID_ARGUMENT;
    lic_clear(c);
    if (install_id) *install_id = NULL;
    if (!c->install_id) {
        if (!c->state_dir)
            return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage",
                            "No install id: set one (licensing_set_install_id) or a state directory to keep one in");
        char *path = lic_path_join(c->state_dir, LIC_INSTALL_ID_FILE), *text = NULL;
        if (!path) return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
        if (lic_read_file(path, &text, NULL) == 0) {
            size_t n = strlen(text);
            while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ')) text[--n] = '\0';
            if (n >= 8 && n <= 128 && lic_utf8_valid(text, n)) c->install_id = lic_strdup(text);
        }
        free(text);
        if (!c->install_id) {
            c->install_id = lic_uuid();
            if (!c->install_id || lic_write_file_atomic(path, c->install_id, strlen(c->install_id)) != 0) {
                free(path);
                return lic_fail(c, LICENSING_IO, "io", "The install id cannot be kept in %s", c->state_dir);
            }
        }
        free(path);
    }
    if (install_id) {
        *install_id = lic_strdup(c->install_id);
        if (!*install_id) return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    }
    return LICENSING_OK;
}

/* POSTs one batch of sessions of one version; the service's `accepted`. */
static int post_sessions(licensing_client *c, const char *version, const char *platform, json_t *sessions,
                         int *accepted) {
    if (lic_empty(c->product))
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "Session pings need the product (licensing_set_product)");
    int rc = licensing_install_id(c, NULL);
    if (rc != LICENSING_OK) return rc;
    char *product = lic_url_escape(c, c->product);
    char *path = product ? lic_sprintf("/v1/updates/%s/sessions", product) : NULL;
    char *install = lic_sprintf("X-Service-Install-Id: %s", c->install_id);
    char *user = c->user_key ? lic_sprintf("X-Service-User-Key: %s", c->user_key) : NULL;
    json_t *body = json_object();
    json_object_set_new(body, "version", json_string(version));
    if (!lic_empty(platform)) json_object_set_new(body, "platform", json_string(platform));
    json_object_set(body, "sessions", sessions);
    char *text = lic_json_dump(body);
    json_decref(body);
    const char *headers[3] = {install, user, NULL};
    lic_response r;
    memset(&r, 0, sizeof r);
    if (!path || !install || !text)
        rc = lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    else
        rc = lic_http(c, "POST", path, headers, text, &r);
    free(product);
    free(path);
    free(install);
    free(user);
    free(text);
    if (rc != LICENSING_OK) return rc;
    if (r.status < 200 || r.status >= 300) {
        rc = lic_refusal(c, "The session ping", &r);
    } else {
        double n = 0;
        if (json_is_object(r.json)) lic_jopt_num(r.json, "accepted", &n);
        if (accepted) *accepted = (int)n;
    }
    lic_response_free(&r);
    return rc;
}

static json_t *session_json(const char *id, const char *status, int64_t started_at, int64_t duration_ms) {
    char iso[32];
    lic_format_iso(started_at, iso);
    json_t *s = json_pack("{s:s, s:s, s:s}", "id", id, "status", status, "startedAt", iso);
    if (s && duration_ms >= 0) json_object_set_new(s, "durationMs", json_integer(duration_ms));
    return s;
}

int licensing_send_session(licensing_client *c, const char *version, const char *platform, const char *session_id,
                           const char *status, int64_t started_at, int64_t duration_ms, int *accepted) {
    if (!c) return LICENSING_INVALID_ARGUMENT;
    lic_clear(c);
    if (accepted) *accepted = 0;
    if (lic_empty(version) || !lic_utf8_valid(version, strlen(version)))
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "version is required");
    if (!valid_status(status))
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "status is one of started, exited, crashed, abnormal");
    if ((platform && !lic_utf8_valid(platform, strlen(platform))) ||
        (session_id && !lic_utf8_valid(session_id, strlen(session_id))))
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "The texts are not valid UTF-8");
    char *fresh = lic_empty(session_id) ? lic_uuid() : NULL;
    json_t *list = json_array();
    json_t *s = session_json(fresh ? fresh : session_id, status, started_at ? started_at : lic_real_now_ms(),
                             duration_ms);
    free(fresh);
    if (!list || !s) {
        json_decref(list);
        json_decref(s);
        return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    }
    json_array_append_new(list, s);
    int rc = post_sessions(c, version, platform, list, accepted);
    json_decref(list);
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}

/* ---- Waiting sessions ---- */

static char *sessions_path(licensing_client *c) { return lic_path_join(c->state_dir, LIC_SESSIONS_FILE); }

static json_t *waiting(licensing_client *c) {
    char *path = sessions_path(c), *text = NULL;
    size_t len = 0;
    json_t *list = NULL;
    if (path && lic_read_file(path, &text, &len) == 0) list = lic_json_parse(text, len);
    free(path);
    free(text);
    if (!json_is_array(list)) {
        json_decref(list);
        list = json_array();
    }
    return list;
}

static int write_waiting(licensing_client *c, json_t *list) {
    while (json_array_size(list) > MAX_KEPT) json_array_remove(list, 0);
    char *text = lic_json_dump(list), *path = sessions_path(c);
    int rc = text && path && lic_write_file_atomic(path, text, strlen(text)) == 0 ? LICENSING_OK : LICENSING_IO;
    free(text);
    free(path);
    if (rc != LICENSING_OK) return lic_fail(c, LICENSING_IO, "io", "The sessions cannot be kept in %s", c->state_dir);
    return LICENSING_OK;
}

/* Writes this run's session (replacing its earlier state). */
static int keep_run(licensing_client *c, const char *status, int64_t duration_ms) {
    json_t *list = waiting(c);
    for (size_t i = json_array_size(list); i-- > 0;) {
        const char *id = lic_jstr(json_array_get(list, i), "id");
        if (id && strcmp(id, c->run_session_id) == 0) json_array_remove(list, i);
    }
    json_t *s = session_json(c->run_session_id, status, c->run_started_at, duration_ms);
    if (s) {
        json_object_set_new(s, "version", json_string(c->run_version));
        if (c->run_platform) json_object_set_new(s, "platform", json_string(c->run_platform));
        json_array_append_new(list, s);
    }
    int rc = s ? write_waiting(c, list) : lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    json_decref(list);
    return rc;
}

static int flush(licensing_client *c, int *accepted) {
    int taken = 0, rc = LICENSING_OK;
    json_t *list = waiting(c);
    /* One request per version (and platform) and batch: each session counts for the release that ran it. */
    while (rc == LICENSING_OK) {
        const char *version = NULL, *platform = NULL;
        for (size_t i = 0; i < json_array_size(list) && !version; i++) {
            json_t *s = json_array_get(list, i);
            if (json_is_true(json_object_get(s, "_sent"))) continue;
            version = lic_jstr(s, "version");
            platform = lic_jstr(s, "platform");
            if (!version) json_object_set_new(s, "_sent", json_true()); /* unreadable: dropped below */
        }
        if (!version) break;
        json_t *batch = json_array(), *members = json_array();
        for (size_t i = 0; i < json_array_size(list) && json_array_size(batch) < BATCH; i++) {
            json_t *s = json_array_get(list, i);
            const char *v = lic_jstr(s, "version"), *p = lic_jstr(s, "platform");
            if (json_is_true(json_object_get(s, "_sent")) || !v || strcmp(v, version) != 0) continue;
            if ((p == NULL) != (platform == NULL) || (p && strcmp(p, platform) != 0)) continue;
            json_t *one = json_pack("{s:O, s:O, s:O}", "id", json_object_get(s, "id"), "status",
                                    json_object_get(s, "status"), "startedAt", json_object_get(s, "startedAt"));
            if (one && json_object_get(s, "durationMs"))
                json_object_set(one, "durationMs", json_object_get(s, "durationMs"));
            if (one) json_array_append_new(batch, one);
            json_array_append(members, s);
        }
        char *v_copy = lic_strdup(version), *p_copy = lic_strdup(platform);
        int n = 0;
        rc = post_sessions(c, v_copy, p_copy, batch, &n);
        free(v_copy);
        free(p_copy);
        json_decref(batch);
        int refused_for_good = rc == LICENSING_REFUSED && !c->unreachable;
        if (rc == LICENSING_OK || refused_for_good) {
            taken += n;
            /* Taken (or refused for good: sent again it would be refused again): no longer kept, but a session
               still running stays for its end. */
            for (size_t i = 0; i < json_array_size(members); i++)
                json_object_set_new(json_array_get(members, i), "_sent", json_true());
            if (refused_for_good) rc = LICENSING_OK;
        }
        json_decref(members);
    }
    /* Keep what was not taken (and this run's session while it is still "started"). */
    json_t *left = waiting(c), *sent_ids = json_object();
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *s = json_array_get(list, i);
        const char *id = lic_jstr(s, "id"), *status = lic_jstr(s, "status");
        if (!id || (json_is_true(json_object_get(s, "_sent")) && !(status && strcmp(status, "started") == 0)))
            json_object_set_new(sent_ids, id ? id : "", json_true());
    }
    json_t *kept = json_array();
    for (size_t i = 0; i < json_array_size(left); i++) {
        json_t *s = json_array_get(left, i);
        const char *id = lic_jstr(s, "id");
        if (id && !json_object_get(sent_ids, id)) json_array_append(kept, s);
    }
    int written = write_waiting(c, kept);
    json_decref(kept);
    json_decref(left);
    json_decref(sent_ids);
    json_decref(list);
    if (accepted) *accepted = taken;
    if (rc == LICENSING_OK && written != LICENSING_OK) rc = written;
    return rc;
}

static int need_state(licensing_client *c) {
    if (!c->state_dir)
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage",
                        "Session tracking keeps sessions in the state directory: licensing_set_state_dir first");
    return LICENSING_OK;
}

int licensing_sessions_flush(licensing_client *c, int *accepted) {
    if (!c) return LICENSING_INVALID_ARGUMENT;
    lic_clear(c);
    if (accepted) *accepted = 0;
    int rc = need_state(c);
    if (rc == LICENSING_OK) rc = flush(c, accepted);
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}

int licensing_session_start(licensing_client *c, const char *version, const char *platform) {
    if (!c) return LICENSING_INVALID_ARGUMENT;
    lic_clear(c);
    int rc = need_state(c);
    if (rc != LICENSING_OK) return rc;
    if (lic_empty(version) || !lic_utf8_valid(version, strlen(version)) ||
        (platform && !lic_utf8_valid(platform, strlen(platform))))
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "version is required (UTF-8)");
    if (lic_empty(c->product))
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "Session pings need the product (licensing_set_product)");
    rc = licensing_install_id(c, NULL);
    if (rc != LICENSING_OK) return rc;
    free(c->run_session_id);
    free(c->run_version);
    free(c->run_platform);
    c->run_session_id = lic_uuid();
    c->run_version = lic_strdup(version);
    c->run_platform = lic_empty(platform) ? NULL : lic_strdup(platform);
    c->run_started_at = lic_real_now_ms();
    if (!c->run_session_id || !c->run_version) return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    rc = keep_run(c, "started", -1);
    if (rc != LICENSING_OK) return rc;
    /* Sent now with those still waiting; offline they wait, which is no error. */
    rc = flush(c, NULL);
    if (rc == LICENSING_NETWORK || c->unreachable) rc = LICENSING_OK;
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}

int licensing_session_end(licensing_client *c, const char *status, int send_now) {
    if (!c) return LICENSING_INVALID_ARGUMENT;
    lic_clear(c);
    int rc = need_state(c);
    if (rc != LICENSING_OK) return rc;
    if (!c->run_session_id)
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "No session was started (licensing_session_start)");
    if (!valid_status(status) || strcmp(status, "started") == 0)
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "status is one of exited, crashed, abnormal");
    rc = keep_run(c, status, lic_real_now_ms() - c->run_started_at);
    if (rc != LICENSING_OK) return rc;
    if (send_now) {
        rc = flush(c, NULL);
        if (rc == LICENSING_NETWORK || c->unreachable) rc = LICENSING_OK;
    }
    return rc == LICENSING_OK ? lic_ok(c) : rc;
}
