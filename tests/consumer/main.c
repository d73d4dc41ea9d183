/* A program that uses vkattn from outside, as an application would: public headers only, linked
 * against an installed vkattn (find_package or pkg-config) or one built with it (add_subdirectory).
 * Checks that the header and the library it runs with agree on the version, that the library is
 * linked the way it was asked for, and runs one small forward (tiny_forward.h) and a few decoding
 * steps through a KV cache (tiny_decode.h).
 *
 * usage: vkattn_consumer shared|static */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tiny_decode.h"
#include "tiny_forward.h"
#include "vkattn.h"

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "shared") != 0 && strcmp(argv[1], "static") != 0)) {
        fprintf(stderr, "usage: %s shared|static\n", argv[0]);
        return 2;
    }
    int failures = 0;

    char header_version[32];
    snprintf(header_version, sizeof header_version, "%d.%d.%d", VKATTN_VERSION_MAJOR, VKATTN_VERSION_MINOR,
             VKATTN_VERSION_PATCH);
    if (strcmp(header_version, vkattn_version_string()) != 0) {
        fprintf(stderr, "header says vkattn %s, the library %s\n", header_version, vkattn_version_string());
        failures++;
    }

    /* Where vkattn's code lies: in libvkattn.so, or in this program (the archive). */
    Dl_info info = {0};
    const char *(*fn)(void) = vkattn_version_string;
    void *address;
    memcpy(&address, &fn, sizeof address);
    const char *object = dladdr(address, &info) && info.dli_fname ? info.dli_fname : "(unknown)";
    int in_shared = strstr(object, "libvkattn.so") != NULL;
    printf("vkattn %s from %s (%s)\n", vkattn_version_string(), object, in_shared ? "shared" : "static");
    if (in_shared != (strcmp(argv[1], "shared") == 0)) {
        fprintf(stderr, "asked for the %s library, got %s\n", argv[1], object);
        failures++;
    }

    failures += tiny_forward_check(argv[0]);
    failures += tiny_decode_check(argv[0]);
    return failures ? 1 : 0;
}
