/*
 * licensing-interop: the C interop program of CONTRACT section 14. `licensing-interop <case> [options]` runs one case
 * with the C client and prints one JSON object on stdout; it exits 0 when the case succeeded, 1 when it was refused
 * (`{"error":{"code","message"}}` with the refusal code of CONTRACT 14), 2 on misuse.
 *
 * Cases: activate, deactivate, validate, seat-request, seat-heartbeat, seat-release, checkout, verify-file,
 * airgap-request, airgap-verify, update-check, session, and bench-validate (bench/clients.mjs: validate with its
 * verification over one kept-alive connection for --seconds, then the verification alone). Options (`--name value` or
 * `--name=value`): --url, --product, --user-key, --machine, --client, --version, --platform, --file, --state, --now,
 * --ca, --nonce, --status, --seconds.
 * scripts/interop.mjs runs it against a local service with the other languages' programs (clients/interop.json).
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "licensing.h"

/* Every request gives up after this long: a network failure is `network`, never a hang. */
#define TIMEOUT_MS 15000L

/* How long bench-validate repeats the verification alone, in seconds. */
#define VERIFY_SECONDS 1.0

static const char *const OPTION_NAMES[] = {"url",  "product", "user-key", "machine", "client", "version", "platform",
                                           "file", "state",   "now",      "ca",      "nonce",  "status",   "seconds"};
#define OPTION_COUNT (sizeof OPTION_NAMES / sizeof OPTION_NAMES[0])

static const char *options[OPTION_COUNT];

static const char *opt(const char *name) {
    for (size_t i = 0; i < OPTION_COUNT; i++)
        if (strcmp(OPTION_NAMES[i], name) == 0) return options[i] && options[i][0] ? options[i] : NULL;
    return NULL;
}

static void print(json_t *value) {
    char *text = json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text) {
        printf("%s\n", text);
        free(text);
    } else {
        printf("{\"error\":{\"code\":\"memory\",\"message\":\"The output cannot be written\"}}\n");
    }
    fflush(stdout);
    json_decref(value);
}

static int usage(const char *message) {
    print(json_pack("{s:{s:s, s:s}}", "error", "code", "usage", "message", message));
    return 2;
}

/* A refusal, or a misuse when the library says so. */
static int refused(licensing_client *c, int status) {
    if (status == LICENSING_INVALID_ARGUMENT) return usage(licensing_last_error(c));
    const char *code = licensing_last_code(c);
    print(json_pack("{s:{s:s, s:s}}", "error", "code", code && code[0] ? code : licensing_status_name(status),
                    "message", licensing_last_error(c)));
    return 1;
}

static json_t *instant(int64_t ms) {
    if (ms == 0) return json_null();
    char iso[32];
    licensing_format_time(ms, iso, sizeof iso);
    return json_string(iso);
}

static json_t *text_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *bigger = realloc(buf, cap * 2 + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Where a seat's token waits between the seat cases: --state, else a folder of the temporary directory; named by
   the service, license, machine and client. */
static char *seat_file(void) {
    const char *dir = opt("state");
    char fallback[512];
    if (!dir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fallback, sizeof fallback, "%s/licensing-interop-c", tmp && tmp[0] ? tmp : "/tmp");
        dir = fallback;
        licensing_client *scratch = NULL;
        if (licensing_client_new(NULL, &scratch) == LICENSING_OK) licensing_set_state_dir(scratch, dir); /* mkdir -p */
        licensing_client_free(scratch);
    }
    char *key = NULL;
    size_t len = strlen(opt("url") ? opt("url") : "") + strlen(opt("user-key") ? opt("user-key") : "") +
                 strlen(opt("machine")) + strlen(opt("client")) + 4;
    key = malloc(len);
    if (!key) return NULL;
    snprintf(key, len, "%s\n%s\n%s\n%s", opt("url") ? opt("url") : "", opt("user-key") ? opt("user-key") : "",
             opt("machine"), opt("client"));
    unsigned char digest[32];
    unsigned int n = 32;
    EVP_Digest(key, strlen(key), digest, &n, EVP_sha256(), NULL);
    free(key);
    char hex[17];
    for (int i = 0; i < 8; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    size_t size = strlen(dir) + 40;
    char *path = malloc(size);
    if (path) snprintf(path, size, "%s/seat-%s.json", dir, hex);
    return path;
}

#define NEED(name)                                                                                                   \
    do {                                                                                                             \
        if (!opt(name)) return usage("--" name " is required for this case");                                        \
    } while (0)

static json_t *license_output(const licensing_license *l) {
    return json_pack("{s:o, s:o, s:o, s:o, s:b}", "licenseId", text_or_null(l->license_id), "machineId",
                     text_or_null(l->machine_id), "productCode", text_or_null(l->product_code), "expiresAt",
                     instant(l->expires_at), "encrypted", l->encrypted);
}

/* Seconds on a clock for intervals (C11's timespec_get: also on Windows). */
static double seconds_now(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double rounded(double value, int digits) {
    double p = pow(10, digits);
    return round(value * p) / p;
}

/* bench-validate: activates --machine (idempotent), then validates over and over for --seconds (default 5) with one
   client (one curl handle: its connection is kept alive), each answer's license key verified by licensing_validate for
   this machine, product and a fresh nonce; then times that verification alone (licensing_verify_license_key, the keys
   in hand) on the last answer for a second. Prints {requests, seconds, perSecond, verifyMicros}. */
static int bench_validate(licensing_client *c) {
    double seconds = 5;
    if (opt("seconds")) {
        char *end = NULL;
        seconds = strtod(opt("seconds"), &end);
        if (!end || *end != '\0' || !(seconds > 0) || isinf(seconds))
            return usage("--seconds is a positive number of seconds");
    }
    const char *machine = opt("machine");
    int rc = licensing_activate(c, machine, NULL, NULL);
    if (rc != LICENSING_OK) return refused(c, rc);
    licensing_validation *last = NULL;
    rc = licensing_validate(c, machine, NULL, &last); /* signs in and fetches the keys: not timed */
    if (rc != LICENSING_OK) return refused(c, rc);
    long requests = 0;
    double started = seconds_now(), now = started;
    while (now - started < seconds) {
        licensing_validation *v = NULL;
        rc = licensing_validate(c, machine, NULL, &v);
        if (rc != LICENSING_OK) {
            licensing_validation_free(last);
            return refused(c, rc);
        }
        licensing_validation_free(last);
        last = v;
        requests++;
        now = seconds_now();
    }
    double elapsed = now - started;
    json_t *answer = json_loads(last->answer_json, 0, NULL);
    const char *key = json_string_value(json_object_get(json_object_get(answer, "license"), "licenseKey"));
    licensing_check check = {0};
    check.machine_id = machine;
    check.nonce = last->license->nonce;
    long verifications = 0;
    double verify_started = seconds_now(), verify_now = verify_started;
    rc = key ? LICENSING_OK : LICENSING_MALFORMED;
    while (rc == LICENSING_OK && verify_now - verify_started < VERIFY_SECONDS) {
        licensing_license *l = NULL;
        rc = licensing_verify_license_key(c, key, &check, &l);
        licensing_license_free(l);
        verifications++;
        verify_now = seconds_now();
    }
    json_decref(answer);
    licensing_validation_free(last);
    if (rc != LICENSING_OK) return refused(c, rc);
    print(json_pack("{s:I, s:f, s:f, s:f}", "requests", (json_int_t)requests, "seconds", rounded(elapsed, 3),
                    "perSecond", rounded((double)requests / elapsed, 1), "verifyMicros",
                    rounded((verify_now - verify_started) * 1e6 / (double)verifications, 1)));
    return 0;
}

static int run(const char *name, licensing_client *c) {
    int rc;
    if (strcmp(name, "activate") == 0) {
        NEED("url");
        NEED("user-key");
        NEED("machine");
        licensing_grant *g = NULL;
        rc = licensing_activate(c, opt("machine"), opt("client"), &g);
        if (rc != LICENSING_OK) return refused(c, rc);
        print(json_pack("{s:o, s:s}", "licenseId", text_or_null(g->license_id), "machineId", opt("machine")));
        licensing_grant_free(g);
        return 0;
    }
    if (strcmp(name, "deactivate") == 0) {
        NEED("url");
        NEED("user-key");
        NEED("machine");
        rc = licensing_deactivate(c, opt("machine"), opt("client"), NULL);
        if (rc != LICENSING_OK) return refused(c, rc);
        print(json_object());
        return 0;
    }
    if (strcmp(name, "validate") == 0) {
        NEED("url");
        NEED("user-key");
        NEED("machine");
        licensing_validation *v = NULL;
        rc = licensing_validate(c, opt("machine"), opt("client"), &v);
        if (rc != LICENSING_OK) return refused(c, rc);
        const licensing_license *l = v->license;
        print(json_pack("{s:b, s:o, s:b, s:b, s:o, s:o, s:o, s:o, s:i, s:o, s:o, s:o}", "valid", 1, "licenseId",
                        text_or_null(l->license_id), "verified", 1, "offline", v->offline, "productCode",
                        text_or_null(l->product_code), "machineId", text_or_null(l->machine_id), "licensingMode",
                        text_or_null(l->licensing_mode), "status", text_or_null(l->status), "offlineGraceDays",
                        l->offline_grace_days, "issuedAt", instant(l->issued_at), "expiresAt", instant(l->expires_at),
                        "graceUntil", instant(v->grace_until)));
        licensing_validation_free(v);
        return 0;
    }
    if (strcmp(name, "bench-validate") == 0) {
        NEED("url");
        NEED("user-key");
        NEED("machine");
        return bench_validate(c);
    }
    if (strcmp(name, "seat-request") == 0 || strcmp(name, "seat-heartbeat") == 0 ||
        strcmp(name, "seat-release") == 0) {
        NEED("url");
        NEED("user-key");
        NEED("machine");
        NEED("client");
        char *path = seat_file();
        if (!path) return usage("Out of memory");
        licensing_grant *g = NULL;
        if (strcmp(name, "seat-request") == 0) {
            rc = licensing_seat_request(c, opt("machine"), opt("client"), &g);
            if (rc != LICENSING_OK) {
                free(path);
                return refused(c, rc);
            }
            json_t *kept = json_pack("{s:s, s:o}", "licenseToken", g->license_token, "licenseId",
                                     text_or_null(g->license_id));
            char *text = json_dumps(kept, JSON_COMPACT);
            json_decref(kept);
            int written = text ? write_text(path, text) : -1;
            free(text);
            free(path);
            if (written != 0) {
                licensing_grant_free(g);
                return usage("The seat's token cannot be kept (--state)");
            }
            print(json_pack("{s:o, s:s}", "licenseId", text_or_null(g->license_id), "clientId", opt("client")));
            licensing_grant_free(g);
            return 0;
        }
        char *text = read_text(path);
        free(path);
        json_t *seat = text ? json_loads(text, 0, NULL) : NULL;
        free(text);
        const char *token = json_string_value(json_object_get(seat, "licenseToken"));
        if (!token) {
            json_decref(seat);
            return usage("No seat was requested for this machine and client (seat-request first)");
        }
        if (strcmp(name, "seat-heartbeat") == 0) {
            rc = licensing_seat_heartbeat(c, token, NULL);
            if (rc == LICENSING_OK)
                print(json_pack("{s:O, s:s}", "licenseId", json_object_get(seat, "licenseId"), "clientId",
                                opt("client")));
        } else {
            rc = licensing_seat_release(c, token, &g);
            if (rc == LICENSING_OK)
                print(json_pack("{s:o, s:s}", "licenseId", text_or_null(g->license_id), "clientId", opt("client")));
            licensing_grant_free(g);
        }
        json_decref(seat);
        return rc == LICENSING_OK ? 0 : refused(c, rc);
    }
    if (strcmp(name, "checkout") == 0) {
        NEED("url");
        NEED("user-key");
        NEED("machine");
        NEED("file");
        char *file = NULL;
        int64_t expires_at = 0;
        rc = licensing_checkout(c, opt("machine"), opt("client"), 1, &file, &expires_at);
        if (rc != LICENSING_OK) return refused(c, rc);
        int written = write_text(opt("file"), file);
        licensing_free(file);
        if (written != 0) return usage("--file cannot be written");
        print(json_pack("{s:o}", "expiresAt", instant(expires_at)));
        return 0;
    }
    if (strcmp(name, "verify-file") == 0 || strcmp(name, "airgap-verify") == 0) {
        int airgap = strcmp(name, "airgap-verify") == 0;
        NEED("file");
        NEED("machine");
        if (airgap) NEED("nonce");
        char *text = read_text(opt("file"));
        if (!text) return usage("--file cannot be read");
        licensing_check check = {0};
        check.machine_id = opt("machine");
        check.client_id = opt("client");
        check.nonce = opt("nonce");
        licensing_license *l = NULL;
        rc = airgap ? licensing_airgap_verify(c, text, &check, &l) : licensing_verify_license_file(c, text, &check, &l);
        free(text);
        if (rc != LICENSING_OK) return refused(c, rc);
        print(license_output(l));
        licensing_license_free(l);
        return 0;
    }
    if (strcmp(name, "airgap-request") == 0) {
        NEED("user-key");
        NEED("machine");
        char *code = NULL, *nonce = NULL;
        rc = licensing_airgap_request(c, opt("machine"), opt("client"), opt("nonce"), &code, &nonce);
        if (rc != LICENSING_OK) return refused(c, rc);
        print(json_pack("{s:s, s:s}", "requestCode", code, "nonce", nonce));
        licensing_free(code);
        licensing_free(nonce);
        return 0;
    }
    if (strcmp(name, "update-check") == 0) {
        NEED("url");
        NEED("product");
        NEED("version");
        NEED("platform");
        licensing_update *u = NULL;
        rc = licensing_check_update(c, opt("version"), opt("platform"), NULL, &u);
        if (rc != LICENSING_OK) return refused(c, rc);
        print(json_pack("{s:b, s:o, s:b, s:b}", "available", u->available, "version", text_or_null(u->version),
                        "required", u->required, "rollback", u->rollback));
        licensing_update_free(u);
        return 0;
    }
    if (strcmp(name, "session") == 0) {
        NEED("url");
        NEED("product");
        NEED("version");
        NEED("machine");
        NEED("status");
        const char *status = opt("status");
        if (strcmp(status, "started") != 0 && strcmp(status, "exited") != 0 && strcmp(status, "crashed") != 0 &&
            strcmp(status, "abnormal") != 0)
            return usage("--status is one of started, exited, crashed, abnormal");
        int accepted = 0;
        rc = licensing_send_session(c, opt("version"), opt("platform"), NULL, status, 0,
                                    strcmp(status, "started") == 0 ? -1 : 1000, &accepted);
        if (rc != LICENSING_OK) return refused(c, rc);
        print(json_pack("{s:i}", "accepted", accepted));
        return 0;
    }
    char message[256];
    snprintf(message, sizeof message, "Unknown case \"%s\"", name);
    return usage(message);
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-' || argv[1][0] == '\0')
        return usage("licensing-interop <case> [options]: a case is required");
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0) {
            char message[256];
            snprintf(message, sizeof message, "Unexpected argument \"%s\"", arg);
            return usage(message);
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        size_t k = OPTION_COUNT;
        for (size_t j = 0; j < OPTION_COUNT; j++)
            if (strlen(OPTION_NAMES[j]) == name_len && strncmp(OPTION_NAMES[j], name, name_len) == 0) k = j;
        if (k == OPTION_COUNT) {
            char message[256];
            snprintf(message, sizeof message, "Unknown option \"%s\"", arg);
            return usage(message);
        }
        if (eq) {
            options[k] = eq + 1;
        } else {
            if (i + 1 >= argc) {
                char message[256];
                snprintf(message, sizeof message, "Option \"%s\" needs a value", arg);
                return usage(message);
            }
            options[k] = argv[++i];
        }
    }

    licensing_client *c = NULL;
    int rc = licensing_client_new(opt("url"), &c);
    if (rc != LICENSING_OK) return usage("--url is not an http(s) address");
    int64_t now = 0;
    if (opt("now") && licensing_parse_time(opt("now"), &now) != LICENSING_OK) {
        licensing_client_free(c);
        return usage("--now is not an ISO 8601 instant");
    }
    if ((now && licensing_set_clock(c, now) != LICENSING_OK) ||
        licensing_set_timeout_ms(c, TIMEOUT_MS) != LICENSING_OK ||
        licensing_set_user_key(c, opt("user-key")) != LICENSING_OK ||
        licensing_set_product(c, opt("product")) != LICENSING_OK ||
        licensing_set_app_version(c, opt("version")) != LICENSING_OK ||
        licensing_set_install_id(c, opt("machine")) != LICENSING_OK ||
        licensing_set_ca_file(c, opt("ca")) != LICENSING_OK ||
        licensing_set_state_dir(c, opt("state")) != LICENSING_OK) {
        int exit = usage(licensing_last_error(c));
        licensing_client_free(c);
        return exit;
    }
    int exit = run(argv[1], c);
    licensing_client_free(c);
    return exit;
}
