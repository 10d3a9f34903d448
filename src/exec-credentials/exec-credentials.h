/* mcpvisor-exec-credentials VAR=ID [VAR=ID ...] -- COMMAND [ARGS...]
 *
 * The first process of a server's transient unit when its env reads credentials: each ID
 * is a credential of the unit (LoadCredential=ID:PATH, so the manager read it into
 * $CREDENTIALS_DIRECTORY/ID), set as VAR in the environment, then COMMAND is executed in
 * its place. The secrets are never in an argument or a unit property, only in the
 * server's own environment, as with the exec launcher; credential.c reads them the same
 * way the daemon does. $CREDENTIALS_DIRECTORY is not passed on (the exec launcher's
 * servers never had it).
 *
 * Exit status, as env(1) has them: 125 when the helper itself fails (its arguments, a
 * credential missing or unreadable), 126 when COMMAND cannot be run, 127 when it is not
 * found. Each says why on stderr, which the daemon logs under the server's name. */
#pragma once

#include <stddef.h>

#define EXEC_CREDENTIALS_FAILED 125
#define EXEC_CREDENTIALS_CANNOT_RUN 126
#define EXEC_CREDENTIALS_NOT_FOUND 127

struct exec_credentials {
        char **pairs;   /* the VAR=ID arguments, in argv */
        size_t n_pairs;
        char **command; /* COMMAND [ARGS...], NULL-terminated, in argv */
};

/* Parses argv (argv[0] the helper's name). 0, or -EINVAL with *error (malloc'd) saying
 * which argument is wrong. Nothing is allocated in ret: it points into argv. */
int exec_credentials_parse(int argc, char **argv, struct exec_credentials *ret, char **error);

/* Sets each VAR to the credential ID read from dir (NULL: none given). 0, or a negative
 * errno with *error (malloc'd) naming the variable and the credential, never a value. */
int exec_credentials_apply(const struct exec_credentials *c, const char *dir, char **error);
