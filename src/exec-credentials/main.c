/* mcpvisor-exec-credentials: a server's credentials into its environment, then the server;
 * see exec-credentials.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec-credentials.h"

#define NAME "mcpvisor-exec-credentials"

static int fail(char *error) {
        fprintf(stderr, NAME ": %s\n", error ? error : strerror(ENOMEM));
        free(error);
        return EXEC_CREDENTIALS_FAILED;
}

int main(int argc, char **argv) {
        struct exec_credentials c;
        char *error = NULL;
        int saved;

        if (exec_credentials_parse(argc, argv, &c, &error) < 0) {
                fprintf(stderr, "usage: " NAME " VAR=ID [VAR=ID...] -- COMMAND [ARGS...]\n");
                return fail(error);
        }
        if (exec_credentials_apply(&c, getenv("CREDENTIALS_DIRECTORY"), &error) < 0)
                return fail(error);
        (void)unsetenv("CREDENTIALS_DIRECTORY");
        execvp(c.command[0], c.command);
        saved = errno;
        fprintf(stderr, NAME ": cannot run %s: %s\n", c.command[0], strerror(saved));
        return saved == ENOENT ? EXEC_CREDENTIALS_NOT_FOUND : EXEC_CREDENTIALS_CANNOT_RUN;
}
