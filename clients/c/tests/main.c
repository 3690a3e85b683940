/* licensing-tests <suite> <data>: the C client's tests, one CTest test per suite (CMakeLists.txt). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testing.h"

int test_failures = 0;
int test_checks = 0;

char *test_read(const char *path) {
    char *text = NULL;
    if (lic_read_file(path, &text, NULL) != 0) return NULL;
    return text;
}

json_t *test_manifest(const char *path, char *dir, size_t dir_size) {
    snprintf(dir, dir_size, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, dir_size, ".");
    json_error_t error;
    json_t *manifest = json_load_file(path, 0, &error);
    if (!json_is_array(manifest)) {
        fprintf(stderr, "cannot read the manifest %s: %s\n", path, error.text);
        json_decref(manifest);
        return NULL;
    }
    return manifest;
}

char *test_vector_file(const char *dir, const json_t *vector, const char *role) {
    const char *name = json_string_value(json_object_get(json_object_get(vector, "files"), role));
    if (!name) return NULL;
    char *path = lic_sprintf("%s/%s", dir, name);
    char *text = path ? test_read(path) : NULL;
    if (!text) fprintf(stderr, "cannot read %s\n", path ? path : name);
    free(path);
    return text;
}

const char *test_param(const json_t *vector, const char *name) {
    return json_string_value(json_object_get(json_object_get(vector, "params"), name));
}

long long test_param_time(const json_t *vector, const char *name) {
    const char *iso = test_param(vector, name);
    int64_t ms = 0;
    if (iso && licensing_parse_time(iso, &ms) != LICENSING_OK) return 0;
    return (long long)ms;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "licensing-tests <vectors|tamper|robust|numbers|units|grace|network> <data>\n");
        return 2;
    }
    const char *suite = argv[1], *data = argv[2];
    int rc;
    if (strcmp(suite, "vectors") == 0) rc = run_vectors(data);
    else if (strcmp(suite, "tamper") == 0) rc = run_tamper(data);
    else if (strcmp(suite, "robust") == 0) rc = run_robust(data);
    else if (strcmp(suite, "numbers") == 0) rc = run_numbers(data);
    else if (strcmp(suite, "units") == 0) rc = run_units(data);
    else if (strcmp(suite, "grace") == 0) rc = run_grace(data);
    else if (strcmp(suite, "network") == 0) rc = run_network(data);
    else {
        fprintf(stderr, "unknown suite %s\n", suite);
        return 2;
    }
    printf("%s: %d checks, %d failed\n", suite, test_checks, test_failures);
    return rc != 0 || test_failures > 0 ? 1 : 0;
}
