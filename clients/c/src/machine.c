/*
 * A stable id of this machine, as the TypeScript client's machineId() makes it (node-machine-id): the operating
 * system's installation id (Linux /var/lib/dbus/machine-id or /etc/machine-id, macOS IOPlatformUUID, Windows
 * MachineGuid), lower case, hashed with SHA-256 so the raw id never leaves the machine; with a salt,
 * SHA-256("<salt>:<raw id>"). 64 lowercase hex characters either way.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#  include <windows.h>
#endif

#include "internal.h"

/* The raw id, lower case, without white space; NULL when the system has none. */
static char *raw_machine_id(void) {
    char buf[256] = "";
#if defined(_WIN32)
    DWORD size = sizeof buf;
    if (RegGetValueA(HKEY_LOCAL_MACHINE, "SOFTWARE\\Microsoft\\Cryptography", "MachineGuid",
                     RRF_RT_REG_SZ | RRF_SUBKEY_WOW6464KEY, NULL, buf, &size) != ERROR_SUCCESS)
        return NULL;
#elif defined(__APPLE__)
    FILE *p = popen("ioreg -rd1 -c IOPlatformExpertDevice", "r");
    if (!p) return NULL;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        char *at = strstr(line, "IOPlatformUUID");
        if (!at) continue;
        char *eq = strchr(at, '=');
        char *open = eq ? strchr(eq, '"') : NULL;
        char *close = open ? strchr(open + 1, '"') : NULL;
        if (close) snprintf(buf, sizeof buf, "%.*s", (int)(close - open - 1), open + 1);
        break;
    }
    pclose(p);
#else
    const char *files[] = {"/var/lib/dbus/machine-id", "/etc/machine-id"};
    for (size_t i = 0; i < 2 && !buf[0]; i++) {
        FILE *f = fopen(files[i], "r");
        if (!f) continue;
        if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
        fclose(f);
    }
#endif
    size_t n = 0;
    for (char *s = buf; *s; s++)
        if (!isspace((unsigned char)*s)) buf[n++] = (char)tolower((unsigned char)*s);
    buf[n] = '\0';
    return n ? lic_strdup(buf) : NULL;
}

int licensing_machine_id(const char *salt, char **machine_id) {
    if (!machine_id) return LICENSING_INVALID_ARGUMENT;
    *machine_id = NULL;
    char *raw = raw_machine_id();
    if (!raw) return LICENSING_IO;
    char *text = lic_empty(salt) ? lic_strdup(raw) : lic_sprintf("%s:%s", salt, raw);
    free(raw);
    if (!text) return LICENSING_NO_MEMORY;
    unsigned char digest[32];
    lic_sha256(text, strlen(text), digest);
    free(text);
    *machine_id = lic_hex(digest, 32);
    return *machine_id ? LICENSING_OK : LICENSING_NO_MEMORY;
}
