/*
 * RFC 8785 JSON Canonicalization Scheme (JCS): the bytes the service signs for an update check (CONTRACT section 5).
 * Numbers are IEEE doubles written as ECMAScript's Number.prototype.toString writes them (the shortest digits that
 * read back to the same double, in plain or exponent form by ECMAScript's rule), strings as JSON.stringify writes
 * them, object members sorted by their names' UTF-16 code units. the jcs vectors of clients/vectors check it.
 */
#define _GNU_SOURCE /* newlocale / uselocale */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __APPLE__
#  include <xlocale.h>
#endif

#include "internal.h"

#if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
#  define LIC_HAVE_USELOCALE 1
#endif

/* "%.*e" of v (positive) read as its digits and exponent: v ~ d[0].d[1..p-1] x 10^exp. */
static void scientific(double v, int p, char *digits, int *exp10) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    int n = 0;
    const char *s = buf;
    for (; *s && *s != 'e' && *s != 'E'; s++)
        if (*s >= '0' && *s <= '9') digits[n++] = *s;
    digits[n] = '\0';
    *exp10 = *s ? atoi(s + 1) : 0;
}

/* Whether digits x 10^exp10 (as d.ddd) reads back as v. */
static int reads_as(const char *digits, int exp10, double v) {
    char buf[64];
    int p = (int)strlen(digits);
    if (p == 1)
        snprintf(buf, sizeof buf, "%ce%d", digits[0], exp10);
    else
        snprintf(buf, sizeof buf, "%c.%se%d", digits[0], digits + 1, exp10);
    return strtod(buf, NULL) == v;
}

/* The p-digit decimal next to digits x 10^exp10, above (`up`) or below. */
static void neighbour(const char *digits, int exp10, int up, char *out, int *out_exp) {
    int p = (int)strlen(digits);
    memcpy(out, digits, (size_t)p + 1);
    *out_exp = exp10;
    if (up) {
        int i = p - 1;
        while (i >= 0 && out[i] == '9') out[i--] = '0';
        if (i >= 0) {
            out[i]++;
        } else { /* 99..9 + 1 = 100..0: one more digit, kept to p */
            out[0] = '1';
            for (int j = 1; j < p; j++) out[j] = '0';
            (*out_exp)++;
        }
    } else {
        int i = p - 1;
        while (i >= 0 && out[i] == '0') out[i--] = '9';
        if (i >= 0) out[i]--;
        if (out[0] == '0') { /* 10..0 - 1 = 99..9 one decade lower, with p digits */
            for (int j = 0; j < p; j++) out[j] = '9';
            (*out_exp)--;
        }
    }
}

/* The shortest digits that read back as v (positive, finite), and the exponent of the first one. When the nearest
   decimal of that many digits does not read back but the one on the other side does (at a power of two, where the
   doubles' spacing changes), that one is taken, as ECMAScript does. */
static void shortest(double v, char *digits, int *exp10) {
    for (int p = 1; p <= 17; p++) {
        scientific(v, p, digits, exp10);
        if (reads_as(digits, *exp10, v)) break;
        char other[24];
        int other_exp;
        int found = 0;
        for (int up = 1; up >= 0 && !found; up--) {
            neighbour(digits, *exp10, up, other, &other_exp);
            if (other[0] != '0' && reads_as(other, other_exp, v)) {
                memcpy(digits, other, strlen(other) + 1);
                *exp10 = other_exp;
                found = 1;
            }
        }
        if (found) break;
    }
    size_t n = strlen(digits);
    while (n > 1 && digits[n - 1] == '0') digits[--n] = '\0';
}

int lic_format_number(double d, char out[40]) {
    if (isnan(d) || isinf(d)) return -1;
    if (d == 0) { /* -0 too */
        strcpy(out, "0");
        return 0;
    }
#ifdef LIC_HAVE_USELOCALE
    /* snprintf and strtod follow the thread's LC_NUMERIC: read and write numbers in the C locale. */
    locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t previous = c_locale ? uselocale(c_locale) : (locale_t)0;
#endif
    char *o = out;
    if (d < 0) {
        *o++ = '-';
        d = -d;
    }
    char digits[24];
    int exp10;
    shortest(d, digits, &exp10);
#ifdef LIC_HAVE_USELOCALE
    if (c_locale) {
        uselocale(previous);
        freelocale(c_locale);
    }
#endif
    int k = (int)strlen(digits);
    int n = exp10 + 1; /* d = 0.digits x 10^n */
    if (k <= n && n <= 21) {
        memcpy(o, digits, (size_t)k);
        o += k;
        for (int i = 0; i < n - k; i++) *o++ = '0';
        *o = '\0';
    } else if (0 < n && n <= 21) {
        memcpy(o, digits, (size_t)n);
        o += n;
        *o++ = '.';
        memcpy(o, digits + n, (size_t)(k - n));
        o += k - n;
        *o = '\0';
    } else if (-6 < n && n <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -n; i++) *o++ = '0';
        memcpy(o, digits, (size_t)k);
        o += k;
        *o = '\0';
    } else {
        int e = n - 1;
        *o++ = digits[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(k - 1));
            o += k - 1;
        }
        sprintf(o, "e%c%d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    return 0;
}

/* A member name as UTF-16 code units (RFC 8785 sorts by them). */
typedef struct member {
    const char *key;
    size_t key_len;
    uint16_t *units;
    size_t unit_count;
    json_t *value;
} member;

static int to_utf16(const char *s, size_t n, uint16_t **units, size_t *count) {
    uint16_t *out = malloc((n + 1) * sizeof *out);
    if (!out) return -1;
    size_t c = 0;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        unsigned char b = p[i];
        if (b < 0x80) {
            cp = b;
            i += 1;
        } else if (b < 0xe0 && i + 1 < n) {
            cp = (uint32_t)(b & 0x1f) << 6 | (p[i + 1] & 0x3f);
            i += 2;
        } else if (b < 0xf0 && i + 2 < n) {
            cp = (uint32_t)(b & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6 | (p[i + 2] & 0x3f);
            i += 3;
        } else if (i + 3 < n) {
            cp = (uint32_t)(b & 0x07) << 18 | (uint32_t)(p[i + 1] & 0x3f) << 12 | (uint32_t)(p[i + 2] & 0x3f) << 6 |
                 (p[i + 3] & 0x3f);
            i += 4;
        } else {
            free(out);
            return -1;
        }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            out[c++] = (uint16_t)(0xd800 + (cp >> 10));
            out[c++] = (uint16_t)(0xdc00 + (cp & 0x3ff));
        } else {
            out[c++] = (uint16_t)cp;
        }
    }
    *units = out;
    *count = c;
    return 0;
}

static int compare_members(const void *a, const void *b) {
    const member *x = a, *y = b;
    size_t n = x->unit_count < y->unit_count ? x->unit_count : y->unit_count;
    for (size_t i = 0; i < n; i++)
        if (x->units[i] != y->units[i]) return x->units[i] < y->units[i] ? -1 : 1;
    return x->unit_count < y->unit_count ? -1 : x->unit_count > y->unit_count ? 1 : 0;
}

static int serialize(const json_t *v, lic_buf *b, int depth) {
    if (depth > 4096) return -1;
    switch (json_typeof(v)) {
    case JSON_NULL: lic_buf_puts(b, "null"); return 0;
    case JSON_TRUE: lic_buf_puts(b, "true"); return 0;
    case JSON_FALSE: lic_buf_puts(b, "false"); return 0;
    case JSON_INTEGER:
    case JSON_REAL: {
        char num[40];
        if (lic_format_number(json_number_value(v), num) != 0) return -1;
        lic_buf_puts(b, num);
        return 0;
    }
    case JSON_STRING: return lic_buf_json_string(b, json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        lic_buf_puts(b, "[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i > 0) lic_buf_puts(b, ",");
            if (serialize(json_array_get(v, i), b, depth + 1) != 0) return -1;
        }
        lic_buf_puts(b, "]");
        return 0;
    }
    case JSON_OBJECT: {
        size_t count = json_object_size(v), i = 0;
        member *members = calloc(count ? count : 1, sizeof *members);
        if (!members) return -1;
        const char *key;
        size_t key_len;
        json_t *value;
        int rc = 0;
        json_object_keylen_foreach((json_t *)v, key, key_len, value) {
            if (i >= count) break;
            members[i].key = key;
            members[i].key_len = key_len;
            members[i].value = value;
            if (!lic_utf8_valid(key, key_len) || to_utf16(key, key_len, &members[i].units, &members[i].unit_count)) {
                rc = -1;
                i++;
                break;
            }
            i++;
        }
        if (rc == 0) {
            qsort(members, i, sizeof *members, compare_members);
            lic_buf_puts(b, "{");
            for (size_t j = 0; j < i && rc == 0; j++) {
                if (j > 0) lic_buf_puts(b, ",");
                rc = lic_buf_json_string(b, members[j].key, members[j].key_len);
                lic_buf_puts(b, ":");
                if (rc == 0) rc = serialize(members[j].value, b, depth + 1);
            }
            lic_buf_puts(b, "}");
        }
        for (size_t j = 0; j < count; j++) free(members[j].units);
        free(members);
        return rc;
    }
    }
    return -1;
}

int lic_jcs(const json_t *value, char **out, size_t *out_len) {
    lic_buf b = {0};
    if (serialize(value, &b, 0) != 0 || b.failed) {
        free(b.data);
        return -1;
    }
    size_t len = b.len;
    *out = lic_buf_take(&b);
    if (!*out) return -1;
    if (out_len) *out_len = len;
    return 0;
}

int licensing_canonicalize(licensing_client *c, const char *json, size_t length, char **canonical) {
    if (c) lic_clear(c);
    if (!json || !canonical) {
        return c ? lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage", "licensing_canonicalize: no JSON text")
                 : LICENSING_INVALID_ARGUMENT;
    }
    *canonical = NULL;
    json_t *value = lic_json_parse(json, length);
    if (!value)
        return c ? lic_fail(c, LICENSING_MALFORMED, "malformed",
                            "The text is not JSON (or holds a lone surrogate, which RFC 8785 refuses)")
                 : LICENSING_MALFORMED;
    int rc = lic_jcs(value, canonical, NULL);
    json_decref(value);
    if (rc != 0)
        return c ? lic_fail(c, LICENSING_MALFORMED, "malformed", "The JSON holds a value RFC 8785 refuses")
                 : LICENSING_MALFORMED;
    return c ? lic_ok(c) : LICENSING_OK;
}
