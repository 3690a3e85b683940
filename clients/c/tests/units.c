/*
 * Unit tests: number formatting against ECMAScript (tests/data/numbers.txt, made by node), times, base64, codes,
 * misuse of the API; offline grace from a kept validation (the vectors' signed answer); network failures and
 * timeouts (a closed port, a server that never answers): `network`, never a hang.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "testing.h"

int run_numbers(const char *table) {
    char *text = test_read(table);
    if (!text) {
        fprintf(stderr, "cannot read %s\n", table);
        return 1;
    }
    int count = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char expected[64];
        unsigned long long bits;
        if (sscanf(line, "%llx %63s", &bits, expected) != 2) continue;
        double d;
        memcpy(&d, &bits, sizeof d);
        char got[40];
        CHECK(lic_format_number(d, got) == 0 && strcmp(got, expected) == 0, "%016llx: expected %s, got %s", bits,
              expected, got);
        count++;
    }
    free(text);
    printf("%d numbers written as ECMAScript writes them\n", count);
    CHECK(count > 1000, "the table has too few numbers");
    return 0;
}

static void canonical_is(const char *json, const char *expected) {
    char *out = NULL;
    int rc = licensing_canonicalize(NULL, json, strlen(json), &out);
    CHECK(rc == LICENSING_OK && out && strcmp(out, expected) == 0, "JCS of %s: expected %s, got %s", json, expected,
          out ? out : licensing_status_name(rc));
    licensing_free(out);
}

int run_units(const char *manifest) {
    (void)manifest;
    /* Times. */
    int64_t ms = 0;
    CHECK(licensing_parse_time("2026-01-01T00:00:00Z", &ms) == 0 && ms == INT64_C(1767225600000), "ISO Z");
    CHECK(licensing_parse_time("2026-01-01T00:00:00.123456Z", &ms) == 0 && ms == INT64_C(1767225600123), "fraction");
    CHECK(licensing_parse_time("2026-01-01T02:00:00+02:00", &ms) == 0 && ms == INT64_C(1767225600000), "offset");
    CHECK(licensing_parse_time("2026-01-01", &ms) == 0 && ms == INT64_C(1767225600000), "date only");
    CHECK(licensing_parse_time("1969-12-31T23:59:59.999Z", &ms) == 0 && ms == -1, "before 1970");
    CHECK(licensing_parse_time("2026-02-30T00:00:00Z", &ms) != 0, "February 30th");
    CHECK(licensing_parse_time("not a date", &ms) != 0, "garbage");
    CHECK(licensing_parse_time("2026-01-01T00:00:00Zjunk", &ms) != 0, "trailing junk");
    char iso[32];
    licensing_format_time(INT64_C(1767225600123), iso, sizeof iso);
    CHECK(strcmp(iso, "2026-01-01T00:00:00.123Z") == 0, "format: %s", iso);
    licensing_format_time(-1, iso, sizeof iso);
    CHECK(strcmp(iso, "1969-12-31T23:59:59.999Z") == 0, "format before 1970: %s", iso);
    for (int64_t t = -INT64_C(5000000000000); t < INT64_C(5000000000000); t += INT64_C(123456789123)) {
        licensing_format_time(t, iso, sizeof iso);
        CHECK(licensing_parse_time(iso, &ms) == 0 && ms == t, "round trip of %lld via %s", (long long)t, iso);
    }

    /* base64. */
    unsigned char *bytes = NULL;
    size_t n = 0;
    CHECK(lic_b64_decode("aGVsbG8", 7, 1, &bytes, &n) == 0 && n == 5 && memcmp(bytes, "hello", 5) == 0, "b64url");
    free(bytes);
    CHECK(lic_b64_decode("aGVsbG8=", 8, 0, &bytes, &n) == 0 && n == 5, "b64 padded");
    free(bytes);
    CHECK(lic_b64_decode("aGV+bG8", 7, 1, &bytes, &n) != 0, "'+' is not base64url");
    CHECK(lic_b64_decode("a", 1, 0, &bytes, &n) != 0, "one character is no byte");

    /* User keys, checksums, codes. */
    char *compact = lic_compact_user_key("b9v2j yj4k7-rv5bv pykj7 1x9w9 iLo");
    CHECK(compact && strcmp(compact, "B9V2JYJ4K7RV5BVPYKJ71X9W9110") == 0, "compact user key: %s", compact);
    free(compact);
    CHECK(lic_crc32((const unsigned char *)"123456789", 9) == 0xcbf43926u, "CRC-32 check value");

    /* JCS details beyond the vectors. */
    canonical_is("{\"a\":1,\"a\":2}", "{\"a\":2}"); /* a repeated name: the last, as JSON.parse */
    canonical_is("\"\\u0000\"", "\"\\u0000\"");
    canonical_is("[-0.0, 1E2, 0.1e1, 123456789012345678901234567890]",
                 "[0,100,1,1.2345678901234568e+29]");
    char *out = NULL;
    CHECK(licensing_canonicalize(NULL, "{", 1, &out) == LICENSING_MALFORMED, "not JSON");
    CHECK(licensing_canonicalize(NULL, "[1e400]", 7, &out) == LICENSING_MALFORMED, "a number beyond doubles");
    CHECK(licensing_canonicalize(NULL, "\"\\udc00\"", 8, &out) == LICENSING_MALFORMED, "lone low surrogate");

    /* The machine id: stable, hashed, salted. */
    char *m1 = NULL, *m2 = NULL, *m3 = NULL;
    if (licensing_machine_id(NULL, &m1) == LICENSING_OK) {
        CHECK(licensing_machine_id("studio", &m2) == LICENSING_OK && licensing_machine_id("studio", &m3) == 0,
              "salted machine ids");
        CHECK(strlen(m1) == 64 && m2 && m3 && strcmp(m2, m3) == 0 && strcmp(m1, m2) != 0, "machine ids: %s %s", m1,
              m2 ? m2 : "");
    } else {
        printf("this system has no machine id (no /etc/machine-id): not checked\n");
    }
    licensing_free(m1);
    licensing_free(m2);
    licensing_free(m3);

    /* Misuse. */
    licensing_client *c = NULL;
    CHECK(licensing_client_new("ftp://example.com", &c) == LICENSING_INVALID_ARGUMENT && !c, "an ftp address");
    CHECK(licensing_client_new(NULL, &c) == LICENSING_OK && c, "an offline client");
    CHECK(licensing_validate(c, NULL, NULL, NULL) == LICENSING_INVALID_ARGUMENT &&
              strcmp(licensing_last_code(c), "usage") == 0,
          "validate without a machine");
    CHECK(licensing_activate(c, "PC", NULL, NULL) == LICENSING_INVALID_ARGUMENT, "activate without a user key");
    licensing_set_user_key(c, "ABCDE");
    CHECK(licensing_activate(c, "PC", NULL, NULL) == LICENSING_INVALID_ARGUMENT, "activate without an address");
    CHECK(licensing_set_trusted_keys(c, "{\"nokeys\":1}") == LICENSING_MALFORMED, "trusted keys that are none");
    licensing_license *l = NULL;
    licensing_check check = {0};
    check.machine_id = "PC";
    CHECK(licensing_verify_license_file(c, "a.b.c", &check, &l) == LICENSING_UNKNOWN_KEY && !l,
          "no keys anywhere: %s", licensing_last_error(c));
    CHECK(licensing_set_trusted_keys(c, "{\"keys\":[]}") == LICENSING_OK, "an empty key set");
    CHECK(licensing_verify_license_file(c, "  ", &check, &l) == LICENSING_MALFORMED, "an empty file");
    CHECK(licensing_airgap_verify(c, "LRS2-XXXXX", &check, &l) == LICENSING_INVALID_ARGUMENT, "no nonce");
    check.nonce = "n";
    CHECK(licensing_airgap_verify(c, "LRQ1-FCH7C", &check, &l) == LICENSING_MALFORMED, "a request code");
    CHECK(licensing_airgap_verify(c, "LRS2-UUUUU", &check, &l) == LICENSING_MALFORMED, "not base32: %s",
          licensing_last_code(c));
    CHECK(strcmp(licensing_status_name(LICENSING_UNKNOWN_KEY), "unknownKey") == 0, "status names");
    CHECK(licensing_send_session(c, "1.0.0", NULL, NULL, "bogus", 0, -1, NULL) == LICENSING_INVALID_ARGUMENT,
          "a session status that is none");
    licensing_client_free(c);
    licensing_client_free(NULL);
    licensing_free(NULL);
    return 0;
}

/* ---- Offline grace from a kept validation ---- */

/* An address where nothing listens. */
static char *closed_url(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(s, (struct sockaddr *)&a, sizeof a);
    getsockname(s, (struct sockaddr *)&a, &len);
    close(s);
    return lic_sprintf("http://127.0.0.1:%d", ntohs(a.sin_port));
}

static char *temp_dir(void) {
    char templ[] = "/tmp/licensing-c-test-XXXXXX";
    char *dir = mkdtemp(templ);
    return dir ? lic_strdup(dir) : NULL;
}

static void write_text(const char *dir, const char *name, const char *text) {
    char *path = lic_path_join(dir, name);
    lic_write_file_atomic(path, text, strlen(text));
    free(path);
}

int run_grace(const char *manifest) {
    char dir[1024];
    json_t *vectors = test_manifest(manifest, dir, sizeof dir);
    if (!vectors) return 1;
    json_t *v = NULL, *each;
    size_t i;
    json_array_foreach(vectors, i, each)
        if (strcmp(json_string_value(json_object_get(each, "name")), "validation-activated") == 0) v = each;
    if (!v) {
        fprintf(stderr, "no validation-activated vector\n");
        json_decref(vectors);
        return 1;
    }
    char *answer = test_vector_file(dir, v, "answer"), *jwks = test_vector_file(dir, v, "jwks");
    json_t *parsed = json_loads(answer, 0, NULL);
    const char *key = json_string_value(json_object_get(json_object_get(parsed, "license"), "licenseKey"));
    int64_t iat = lic_jws_iat_ms(key);
    char *state = temp_dir(), *url = closed_url();
    write_text(state, "jwks.json", jwks);
    json_t *kept = json_pack("{s:i, s:s, s:s}", "v", 1, "machineId", "PC-VECTOR-1", "licenseKey", key);
    char *kept_text = json_dumps(kept, JSON_COMPACT);
    write_text(state, "licensing-validation.json", kept_text);

    licensing_client *c = NULL;
    licensing_client_new(url, &c);
    licensing_set_user_key(c, "B9V2J-YJ4K7-RV5BV-PYKJ7-1X9W9");
    licensing_set_product(c, "vector-studio");
    licensing_set_state_dir(c, state);
    licensing_set_timeout_ms(c, 3000);

    licensing_validation *val = NULL;
    licensing_set_clock(c, iat + LIC_DAY_MS);
    int rc = licensing_validate(c, "PC-VECTOR-1", NULL, &val);
    CHECK(rc == LICENSING_OK && val && val->offline == 1, "within the grace: %s %s", licensing_last_code(c),
          licensing_last_error(c));
    if (val) {
        CHECK(strcmp(val->license->license_id, "lic506A04DE") == 0, "the kept license");
        CHECK(val->grace_until == iat + 7 * LIC_DAY_MS, "seven days of grace");
    }
    licensing_validation_free(val);
    val = NULL;

    licensing_set_clock(c, iat + LIC_DAY_MS / 2);
    CHECK(licensing_validate(c, "PC-VECTOR-1", NULL, &val) == LICENSING_CLOCK && !val, "before the last time seen: %s",
          licensing_last_code(c));
    licensing_set_clock(c, iat + 8 * LIC_DAY_MS);
    CHECK(licensing_validate(c, "PC-VECTOR-1", NULL, &val) == LICENSING_GRACE &&
              strcmp(licensing_last_code(c), "grace") == 0,
          "beyond the grace: %s", licensing_last_code(c));
    CHECK(licensing_validate(c, "PC-OTHER", NULL, &val) == LICENSING_GRACE, "another machine: %s",
          licensing_last_code(c));
    licensing_set_product(c, "other-product");
    licensing_set_clock(c, iat + 2 * LIC_DAY_MS);
    CHECK(licensing_validate(c, "PC-VECTOR-1", NULL, &val) == LICENSING_GRACE, "another product: %s",
          licensing_last_code(c));
    licensing_set_product(c, "vector-studio");
    CHECK(licensing_validate(c, "PC-VECTOR-1", NULL, &val) == LICENSING_OK && val && val->offline,
          "within the grace again: %s", licensing_last_code(c));
    licensing_validation_free(val);
    val = NULL;

    /* A kept key that was altered proves nothing. */
    char *altered = lic_strdup(kept_text);
    char *sig = strrchr(altered, '.') + 5;
    *sig = *sig == 'A' ? 'B' : 'A';
    write_text(state, "licensing-validation.json", altered);
    CHECK(licensing_validate(c, "PC-VECTOR-1", NULL, &val) == LICENSING_GRACE, "an altered kept key: %s",
          licensing_last_code(c));
    free(altered);

    /* The service's last word was a refusal: no grace. */
    write_text(state, "licensing-validation.json",
               "{\"v\":1,\"machineId\":\"PC-VECTOR-1\",\"refused\":{\"message\":\"The license has been revoked\","
               "\"reason\":\"licenseRevoked\",\"at\":\"2026-11-29T00:00:00Z\"}}");
    CHECK(licensing_validate(c, "PC-VECTOR-1", NULL, &val) == LICENSING_REFUSED &&
              strcmp(licensing_last_code(c), "licenseRevoked") == 0,
          "a kept refusal: %s", licensing_last_code(c));

    /* No state directory: nothing kept, the network failure itself. */
    licensing_client *bare = NULL;
    licensing_client_new(url, &bare);
    licensing_set_user_key(bare, "B9V2J-YJ4K7-RV5BV-PYKJ7-1X9W9");
    CHECK(licensing_validate(bare, "PC-VECTOR-1", NULL, &val) == LICENSING_NETWORK &&
              strcmp(licensing_last_code(bare), "network") == 0,
          "unreachable without state: %s", licensing_last_code(bare));
    licensing_client_free(bare);

    licensing_client_free(c);
    char *cmd = lic_sprintf("rm -rf '%s'", state);
    if (cmd && system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", state);
    free(cmd);
    free(state);
    free(url);
    free(kept_text);
    json_decref(kept);
    json_decref(parsed);
    free(answer);
    free(jwks);
    json_decref(vectors);
    return 0;
}

/* ---- Network failures: `network`, in time ---- */

int run_network(const char *manifest) {
    (void)manifest;
    char *url = closed_url();
    licensing_client *c = NULL;
    licensing_client_new(url, &c);
    licensing_set_user_key(c, "ABCDE-ABCDE-ABCDE-ABCDE-ABCDE");
    licensing_set_product(c, "p");
    int64_t start = lic_real_now_ms();
    CHECK(licensing_activate(c, "PC", NULL, NULL) == LICENSING_NETWORK && strcmp(licensing_last_code(c), "network") == 0,
          "a closed port: %s", licensing_last_code(c));
    licensing_update *u = NULL;
    CHECK(licensing_check_update(c, "1.0.0", "win-x64", NULL, &u) == LICENSING_NETWORK, "update check, closed port");
    CHECK(licensing_send_session(c, "1.0.0", NULL, NULL, "started", 0, -1, NULL) == LICENSING_NETWORK ||
              strcmp(licensing_last_code(c), "usage") == 0,
          "session, closed port: %s", licensing_last_code(c));
    CHECK(lic_real_now_ms() - start < 5000, "a closed port answers at once");
    licensing_client_free(c);
    free(url);

    /* A server that takes the connection and never answers: the timeout ends it. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(s, (struct sockaddr *)&a, sizeof a);
    listen(s, 8);
    getsockname(s, (struct sockaddr *)&a, &len);
    url = lic_sprintf("http://127.0.0.1:%d", ntohs(a.sin_port));
    licensing_client_new(url, &c);
    licensing_set_user_key(c, "ABCDE-ABCDE-ABCDE-ABCDE-ABCDE");
    licensing_set_timeout_ms(c, 700);
    start = lic_real_now_ms();
    licensing_validation *v = NULL;
    int rc = licensing_validate(c, "PC", NULL, &v);
    int64_t took = lic_real_now_ms() - start;
    CHECK(rc == LICENSING_NETWORK && strcmp(licensing_last_code(c), "network") == 0, "a silent server: %s (%s)",
          licensing_last_code(c), licensing_last_error(c));
    CHECK(took >= 600 && took < 5000, "the timeout ended it after %lld ms", (long long)took);
    printf("a silent server: %s after %lld ms: %s\n", licensing_last_code(c), (long long)took,
           licensing_last_error(c));
    licensing_client_free(c);
    close(s);
    free(url);
    return 0;
}
