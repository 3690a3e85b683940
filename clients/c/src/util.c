/* Strings, times, base64, files, JSON helpers: what the rest of the library shares. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifdef _WIN32
#  include <direct.h>
#  define lic_mkdir(p) _mkdir(p)
#else
#  include <sys/types.h>
#  include <unistd.h>
#  define lic_mkdir(p) mkdir((p), 0700)
#endif

#include "internal.h"

#ifndef S_ISDIR
#  define S_ISDIR(m) (((m) & S_IFMT) == S_IFDIR)
#endif

char *lic_strdup(const char *s) {
    if (!s) return NULL;
    return lic_strndup(s, strlen(s));
}

char *lic_strndup(const char *s, size_t n) {
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

char *lic_sprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *out = malloc((size_t)n + 1);
    if (!out) return NULL;
    va_start(ap, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return out;
}

int lic_empty(const char *s) { return s == NULL || *s == '\0'; }

int64_t lic_real_now_ms(void) {
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return (int64_t)time(NULL) * 1000;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t lic_now_ms(const licensing_client *c) {
    if (c && c->clock_ms != 0) return c->clock_ms;
    return lic_real_now_ms();
}

/* ---- Times: the proleptic Gregorian calendar, UTC (H. Hinnant's algorithms) ---- */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        char ch = (*p)[i];
        if (ch < '0' || ch > '9') return -1;
        v = v * 10 + (ch - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int days_in_month(int64_t y, int m) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return days[m - 1];
}

/* ISO 8601 as the service writes it (and what Date.parse reads of it): YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|+HH:MM]. A
   date-time without an offset is read as UTC. */
int lic_parse_iso(const char *text, int64_t *ms) {
    if (!text) return -1;
    const char *p = text;
    while (*p == ' ') p++;
    int year, month, day, hour = 0, minute = 0, second = 0, millis = 0;
    if (digits(&p, 4, &year) || *p++ != '-' || digits(&p, 2, &month) || *p++ != '-' || digits(&p, 2, &day))
        return -1;
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month)) return -1;
    int64_t offset_min = 0;
    if (*p == 'T' || *p == 't' || (*p == ' ' && p[1] >= '0' && p[1] <= '9')) {
        p++;
        if (digits(&p, 2, &hour) || *p++ != ':' || digits(&p, 2, &minute)) return -1;
        if (*p == ':') {
            p++;
            if (digits(&p, 2, &second)) return -1;
            if (*p == '.' || *p == ',') {
                p++;
                int n = 0;
                while (*p >= '0' && *p <= '9') {
                    if (n < 3) millis = millis * 10 + (*p - '0');
                    n++;
                    p++;
                }
                if (n == 0) return -1;
                for (; n < 3; n++) millis *= 10;
            }
        }
        if (hour > 24 || minute > 59 || second > 59) return -1;
        if (hour == 24 && (minute || second || millis)) return -1;
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p == '-' ? -1 : 1, oh, om;
            p++;
            if (digits(&p, 2, &oh)) return -1;
            if (*p == ':') p++;
            if (digits(&p, 2, &om)) return -1;
            if (oh > 23 || om > 59) return -1;
            offset_min = sign * (oh * 60 + om);
        }
    }
    while (*p == ' ') p++;
    if (*p != '\0') return -1;
    int64_t days = days_from_civil(year, (unsigned)month, (unsigned)day);
    *ms = ((days * 24 + hour) * 60 + minute - offset_min) * 60000 + (int64_t)second * 1000 + millis;
    return 0;
}

void lic_format_iso(int64_t ms, char out[32]) {
    int64_t days = ms / LIC_DAY_MS, rest = ms % LIC_DAY_MS;
    if (rest < 0) {
        rest += LIC_DAY_MS;
        days--;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    int h = (int)(rest / 3600000), mi = (int)(rest / 60000 % 60), s = (int)(rest / 1000 % 60),
        f = (int)(rest % 1000);
    char text[80];
    if (y >= 0 && y <= 9999)
        snprintf(text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", (int)y, m, d, h, mi, s, f);
    else /* ECMAScript's expanded years */
        snprintf(text, sizeof text, "%+07lld-%02u-%02uT%02d:%02d:%02d.%03dZ", (long long)y, m, d, h, mi, s, f);
    size_t n = strlen(text) < 31 ? strlen(text) : 31;
    memcpy(out, text, n);
    out[n] = '\0';
}

int licensing_parse_time(const char *iso, int64_t *ms) {
    if (!ms) return LICENSING_INVALID_ARGUMENT;
    return lic_parse_iso(iso, ms) == 0 ? LICENSING_OK : LICENSING_MALFORMED;
}

int licensing_format_time(int64_t ms, char *buffer, size_t size) {
    if (!buffer || size < 32) return LICENSING_INVALID_ARGUMENT;
    lic_format_iso(ms, buffer);
    return LICENSING_OK;
}

/* ---- base64 ---- */

static int b64_value(unsigned char ch, int url_only) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '-' || (!url_only && ch == '+')) return 62;
    if (ch == '_' || (!url_only && ch == '/')) return 63;
    return -1;
}

int lic_b64_decode(const char *text, size_t len, int url_only, unsigned char **out, size_t *out_len) {
    unsigned char *buf = malloc(len / 4 * 3 + 3);
    if (!buf) return -1;
    size_t n = 0, chars = 0, pad = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (!url_only && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')) continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        int v = b64_value(ch, url_only);
        if (v < 0 || pad > 0) {
            free(buf);
            return -1;
        }
        chars++;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    /* One character left over holds no byte; padding, when present, must complete a group of four. */
    if (chars % 4 == 1 || pad > 2 || (pad > 0 && (chars + pad) % 4 != 0)) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = n;
    return 0;
}

char *lic_b64url_encode(const unsigned char *data, size_t len) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *out = malloc(len / 3 * 4 + 5);
    if (!out) return NULL;
    size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        out[o++] = alphabet[v >> 6 & 63];
        out[o++] = alphabet[v & 63];
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)data[i] << 16;
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8;
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        out[o++] = alphabet[v >> 6 & 63];
    }
    out[o] = '\0';
    return out;
}

char *lic_hex(const unsigned char *data, size_t len) {
    static const char hex[] = "0123456789abcdef";
    char *out = malloc(len * 2 + 1);
    if (!out) return NULL;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex[data[i] >> 4];
        out[2 * i + 1] = hex[data[i] & 15];
    }
    out[len * 2] = '\0';
    return out;
}

int lic_random_hex(size_t bytes, char **out) {
    unsigned char buf[64];
    if (bytes > sizeof buf || RAND_bytes(buf, (int)bytes) != 1) return -1;
    *out = lic_hex(buf, bytes);
    return *out ? 0 : -1;
}

char *lic_uuid(void) {
    unsigned char b[16];
    if (RAND_bytes(b, 16) != 1) return NULL;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    return lic_sprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
                       b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* ---- Files ---- */

int lic_read_file(const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        if (cap >= (size_t)64 * 1024 * 1024) { /* a state or license file is never this big */
            free(buf);
            buf = NULL;
            break;
        }
        char *bigger = realloc(buf, cap * 2 + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    *text = buf;
    if (len) *len = n;
    return 0;
}

int lic_write_file_atomic(const char *path, const char *text, size_t len) {
    char *suffix = NULL;
    if (lic_random_hex(6, &suffix) != 0) return -1;
    char *tmp = lic_sprintf("%s.%s.tmp", path, suffix);
    free(suffix);
    if (!tmp) return -1;
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(tmp);
        return -1;
    }
    int ok = fwrite(text, 1, len, f) == len;
    ok = (fflush(f) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
#ifdef _WIN32
    if (ok) remove(path);
#endif
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

int lic_mkdirs(const char *dir) {
    char *copy = lic_strdup(dir);
    if (!copy) return -1;
    size_t len = strlen(copy);
    while (len > 1 && (copy[len - 1] == '/' || copy[len - 1] == '\\')) copy[--len] = '\0';
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/' && *p != '\\') continue;
        char saved = *p;
        *p = '\0';
        if (lic_mkdir(copy) != 0 && errno != EEXIST) {
            struct stat st;
            if (stat(copy, &st) != 0) {
                free(copy);
                return -1;
            }
        }
        *p = saved;
    }
    int rc = 0;
    if (lic_mkdir(copy) != 0 && errno != EEXIST) rc = -1;
    struct stat st;
    if (stat(copy, &st) != 0 || !S_ISDIR(st.st_mode)) rc = -1;
    free(copy);
    return rc;
}

char *lic_path_join(const char *dir, const char *name) {
    size_t n = strlen(dir);
    if (n > 0 && (dir[n - 1] == '/' || dir[n - 1] == '\\')) return lic_sprintf("%s%s", dir, name);
    return lic_sprintf("%s/%s", dir, name);
}

/* ---- JSON ---- */

json_t *lic_json_parse(const char *text, size_t len) {
    json_error_t error;
    /* Numbers as doubles, as the service (JavaScript) reads them; \u0000 allowed in strings. */
    return json_loadb(text, len, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &error);
}

char *lic_json_dump(const json_t *value) {
    return json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
}

const char *lic_jstr(const json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) == 0) return NULL;
    return json_string_value(v);
}

int lic_jopt_str(const json_t *o, const char *key, const char **out) {
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v)) return -1;
    if (json_string_length(v) == 0) return 0;
    *out = json_string_value(v);
    return 1;
}

int lic_jopt_num(const json_t *o, const char *key, double *out) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return -1;
    *out = json_number_value(v);
    return 1;
}

int lic_jopt_bool(const json_t *o, const char *key, int *out) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return -1;
    *out = json_is_true(v);
    return 1;
}

int lic_jopt_date(const json_t *o, const char *key, int64_t *ms) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v)) return -1;
    return lic_parse_iso(json_string_value(v), ms) == 0 ? 1 : -1;
}

int lic_jstrings(const json_t *o, const char *key, char ***items, size_t *count) {
    json_t *v = json_object_get(o, key);
    *items = NULL;
    *count = 0;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) return -1;
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++)
        if (!json_is_string(json_array_get(v, i))) return -1;
    if (n == 0) return 0;
    char **out = calloc(n, sizeof *out);
    if (!out) return -1;
    for (size_t i = 0; i < n; i++) {
        out[i] = lic_strdup(json_string_value(json_array_get(v, i)));
        if (!out[i]) {
            lic_free_strings(out, i);
            return -1;
        }
    }
    *items = out;
    *count = n;
    return 0;
}

void lic_free_strings(char **items, size_t count) {
    if (!items) return;
    for (size_t i = 0; i < count; i++) free(items[i]);
    free(items);
}

/* ---- A growing buffer ---- */

void lic_buf_put(lic_buf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data) {
            b->failed = 1;
            return;
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void lic_buf_puts(lic_buf *b, const char *s) { lic_buf_put(b, s, strlen(s)); }

char *lic_buf_take(lic_buf *b) {
    if (b->failed) {
        free(b->data);
        b->data = NULL;
        return NULL;
    }
    if (!b->data) lic_buf_put(b, "", 0);
    char *out = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return out;
}

/* The length of the UTF-8 sequence at s (n bytes left), 0 when it is not a valid one (overlong, a surrogate, above
   U+10FFFF, cut short). */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return 0;
    if (cp >= 0xd800 && cp <= 0xdfff) return 0;
    return len;
}

int lic_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_sequence(p + i, n - i);
        if (len == 0) return 0;
        i += len;
    }
    return 1;
}

/* A string as ECMAScript's JSON.stringify writes it (RFC 8785 section 3.2.2.2). */
int lic_buf_json_string(lic_buf *b, const char *s, size_t n) {
    if (!lic_utf8_valid(s, n)) return -1;
    lic_buf_put(b, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        switch (ch) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (ch < 0x20) {
                snprintf(hex, sizeof hex, "\\u%04x", ch);
                esc = hex;
            }
        }
        if (!esc) continue;
        lic_buf_put(b, s + start, i - start);
        lic_buf_puts(b, esc);
        start = i + 1;
    }
    lic_buf_put(b, s + start, n - start);
    lic_buf_put(b, "\"", 1);
    return b->failed ? -1 : 0;
}
