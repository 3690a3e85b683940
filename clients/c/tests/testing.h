/* What the test programs share: checks that count failures, and reading the vectors' manifest. */
#ifndef LICENSING_TESTING_H
#define LICENSING_TESTING_H

#include <jansson.h>
#include <stdio.h>

#include "licensing.h"

extern int test_failures;
extern int test_checks;

#define CHECK(cond, ...)                                                                                             \
    do {                                                                                                             \
        test_checks++;                                                                                               \
        if (!(cond)) {                                                                                               \
            test_failures++;                                                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                     \
            fprintf(stderr, __VA_ARGS__);                                                                            \
            fprintf(stderr, "\n");                                                                                   \
        }                                                                                                            \
    } while (0)

/* A file's whole text (malloc'd), NULL when it cannot be read. */
char *test_read(const char *path);
/* The manifest (an array), and the folder it is in. */
json_t *test_manifest(const char *path, char *dir, size_t dir_size);
/* A vector's file by role: its text (malloc'd). */
char *test_vector_file(const char *dir, const json_t *vector, const char *role);
/* A param (string) of a vector, or NULL. */
const char *test_param(const json_t *vector, const char *name);
/* A param instant (ms), or 0. */
long long test_param_time(const json_t *vector, const char *name);

int run_vectors(const char *manifest);
int run_tamper(const char *manifest);
int run_robust(const char *manifest);
int run_numbers(const char *table);
int run_units(const char *manifest);
int run_grace(const char *manifest);
int run_network(const char *manifest);

#endif
