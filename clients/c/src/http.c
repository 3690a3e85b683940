/*
 * HTTP with libcurl: one easy handle per client (the connection is reused), a timeout on every request
 * (CURLOPT_TIMEOUT_MS, CURLOPT_CONNECTTIMEOUT_MS), no redirects, the answer read whole (at most 16 MB). A failure to
 * reach the service is LICENSING_NETWORK with curl's reason; with --ca (licensing_set_ca_file) the PEM's certificates
 * are trusted besides the system's.
 */
#include <curl/curl.h>
#include <ctype.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#  define strncasecmp _strnicmp
#else
#  include <strings.h>
#endif

#include "internal.h"

#ifndef _WIN32
#  include <pthread.h>
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
#  define LIC_CURL_INIT() pthread_once(&curl_once, curl_init_once)
#else
static volatile long curl_started = 0;
#  define LIC_CURL_INIT()                                                                                             \
      do {                                                                                                           \
          if (!curl_started) {                                                                                       \
              curl_global_init(CURL_GLOBAL_DEFAULT);                                                                 \
              curl_started = 1;                                                                                      \
          }                                                                                                          \
      } while (0)
#endif

void lic_response_free(lic_response *r) {
    if (!r) return;
    free(r->body);
    free(r->content_type);
    free(r->reason);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

static size_t on_body(char *data, size_t size, size_t count, void *user) {
    lic_buf *b = user;
    size_t n = size * count;
    if (b->len + n > LIC_MAX_ANSWER) return 0; /* too big: curl fails with a write error */
    lic_buf_put(b, data, n);
    return b->failed ? 0 : n;
}

/* Remembers Content-Type and X-Service-Reason (the update routes name their refusal's reason in it). */
static size_t on_header(char *data, size_t size, size_t count, void *user) {
    lic_response *r = user;
    size_t n = size * count;
    const char *colon = memchr(data, ':', n);
    if (!colon) return n;
    size_t name_len = (size_t)(colon - data);
    const char *value = colon + 1;
    size_t value_len = n - name_len - 1;
    while (value_len > 0 && isspace((unsigned char)*value)) {
        value++;
        value_len--;
    }
    while (value_len > 0 && isspace((unsigned char)value[value_len - 1])) value_len--;
    char **slot = NULL;
    if (name_len == 12 && strncasecmp(data, "content-type", 12) == 0) slot = &r->content_type;
    if (name_len == 16 && strncasecmp(data, "x-service-reason", 16) == 0) slot = &r->reason;
    if (slot) {
        free(*slot);
        *slot = lic_strndup(value, value_len);
    }
    return n;
}

/* Adds the certificates of the --ca PEM to OpenSSL's store, keeping the system's. */
static CURLcode add_ca(CURL *curl, void *ssl_ctx, void *user) {
    (void)curl;
    const char *path = user;
    FILE *f = fopen(path, "r");
    if (!f) return CURLE_SSL_CACERT_BADFILE;
    X509_STORE *store = SSL_CTX_get_cert_store((SSL_CTX *)ssl_ctx);
    int added = 0;
    X509 *cert;
    while ((cert = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
        if (X509_STORE_add_cert(store, cert) == 1) added++;
        X509_free(cert);
    }
    fclose(f);
    return added > 0 ? CURLE_OK : CURLE_SSL_CACERT_BADFILE;
}

char *lic_url_escape(licensing_client *c, const char *s) {
    LIC_CURL_INIT();
    if (!c->curl) c->curl = curl_easy_init();
    if (!c->curl) return NULL;
    char *escaped = curl_easy_escape(c->curl, s, 0);
    char *out = lic_strdup(escaped);
    curl_free(escaped);
    return out;
}

int lic_http(licensing_client *c, const char *method, const char *path, const char *const *headers,
             const char *body, lic_response *res) {
    memset(res, 0, sizeof *res);
    if (!c->base_url)
        return lic_fail(c, LICENSING_INVALID_ARGUMENT, "usage",
                        "This client has no service address (licensing_client_new was given none)");
    LIC_CURL_INIT();
    if (!c->curl) c->curl = curl_easy_init();
    CURL *curl = c->curl;
    if (!curl) return lic_fail(c, LICENSING_NO_MEMORY, "memory", "libcurl cannot make a handle");
    curl_easy_reset(curl);
    char *url = lic_sprintf("%s%s", c->base_url, path);
    struct curl_slist *list = NULL;
    list = curl_slist_append(list, "Accept: application/json");
    list = curl_slist_append(list, "User-Agent: licensing-c/" LICENSING_VERSION);
    if (body) list = curl_slist_append(list, "Content-Type: application/json");
    list = curl_slist_append(list, "Expect:");
    for (size_t i = 0; headers && headers[i]; i++) list = curl_slist_append(list, headers[i]);
    if (!url || !list) {
        free(url);
        curl_slist_free_all(list);
        return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    }
    long timeout = c->timeout_ms > 0 ? c->timeout_ms : LIC_DEFAULT_TIMEOUT_MS;
    lic_buf answer = {0};
    char curl_error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout < 10000 ? timeout : 10000L);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, res);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
    if (c->ca_file) {
        /* Added to the system's authorities (libcurl with OpenSSL); a libcurl with another TLS library cannot, so it
           trusts the file instead of them. */
        if (curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, add_ca) == CURLE_OK)
            curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, c->ca_file);
        else
            curl_easy_setopt(curl, CURLOPT_CAINFO, c->ca_file);
    }
    if (strcmp(method, "GET") != 0) curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode done = curl_easy_perform(curl);
    curl_slist_free_all(list);
    if (done != CURLE_OK) {
        free(answer.data);
        free(res->content_type);
        free(res->reason);
        res->content_type = res->reason = NULL;
        int rc = lic_fail(c, LICENSING_NETWORK, "network", "Could not reach %s: %s%s", url,
                          curl_error[0] ? curl_error : curl_easy_strerror(done),
                          done == CURLE_OPERATION_TIMEDOUT ? " (no answer in time)"
                          : (done == CURLE_PEER_FAILED_VERIFICATION || done == CURLE_SSL_CACERT_BADFILE)
                              ? ": the service's certificate is not trusted; pass its CA certificate "
                                "(licensing_set_ca_file, the interop program's --ca)"
                              : "");
        c->unreachable = 1;
        free(url);
        return rc;
    }
    free(url);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &res->status);
    c->http_status = (int)res->status;
    res->len = answer.len;
    res->body = lic_buf_take(&answer);
    if (!res->body) return lic_fail(c, LICENSING_NO_MEMORY, "memory", "Out of memory");
    if (res->len > 0) res->json = lic_json_parse(res->body, res->len);
    return LICENSING_OK;
}

void lic_http_cleanup(licensing_client *c) {
    if (c->curl) curl_easy_cleanup(c->curl);
    c->curl = NULL;
}

int lic_refusal(licensing_client *c, const char *what, const lic_response *r) {
    const char *message = NULL, *reason = NULL;
    if (json_is_object(r->json)) {
        message = lic_jstr(r->json, "message");
        if (!message) message = lic_jstr(r->json, "title");
        reason = lic_jstr(r->json, "reason");
    }
    if (!reason && r->reason && r->reason[0]) reason = r->reason;
    /* 5xx (but the licensing refusals, 520-535, which name a reason) and 429 without a reason: the service, or what
       stands before it, is down or overloaded, which is no judgement of the license: offline grace applies. */
    if (!reason && (r->status >= 500 || r->status == 429)) c->unreachable = 1;
    char code[32];
    snprintf(code, sizeof code, "http%ld", r->status);
    if (message)
        return lic_fail(c, LICENSING_REFUSED, reason ? reason : code, "%s", message);
    return lic_fail(c, LICENSING_REFUSED, reason ? reason : code, "%s answered HTTP %ld", what, r->status);
}
