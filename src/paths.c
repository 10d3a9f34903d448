/* Default socket locations. */
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

char *path_default_socket(const char *name) {
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        char *p;

        if (geteuid() == 0)
                runtime = "/run";
        if (!runtime || runtime[0] != '/') {
                errno = ENOENT; /* no per-user runtime directory: the caller must name a path */
                return NULL;
        }
        if (asprintf(&p, "%s/mcpvisor/%s", runtime, name) < 0)
                return NULL;
        return p;
}
