/* The arguments of mcpvisor-exec-credentials, and its credentials moved into the
 * environment; see exec-credentials.h. */
#include "exec-credentials.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credential.h"
#include "macro.h"
#include "text.h"

static bool name_valid(const char *s, size_t len) {
        if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
                        return false;
        return true;
}

/* A file name in the credentials directory, as LoadCredential= takes its ID. */
static bool id_valid(const char *s) {
        return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static bool pair_valid(const char *arg) {
        const char *eq = strchr(arg, '=');

        return eq && name_valid(arg, (size_t)(eq - arg)) && id_valid(eq + 1);
}

int exec_credentials_parse(int argc, char **argv, struct exec_credentials *ret, char **error) {
        int i = 1;

        for (; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (!pair_valid(argv[i])) {
                        text_error(error, "'%s' is not VAR=ID (a variable name, '=', a credential's name)", argv[i]);
                        return -EINVAL;
                }
        if (i == argc) {
                text_error(error, "no '--' before the command");
                return -EINVAL;
        }
        if (i + 1 == argc) {
                text_error(error, "no command after '--'");
                return -EINVAL;
        }
        *ret = (struct exec_credentials){ .pairs = argv + 1, .n_pairs = (size_t)(i - 1), .command = argv + i + 1 };
        return 0;
}

/* The value is wiped before it is freed: setenv() keeps a copy of its own. */
static int apply_one(const char *pair, const char *dir, char **error) {
        const char *id = strchr(pair, '=') + 1;
        _cleanup_free_ char *name = strndup(pair, (size_t)(id - 1 - pair));
        char *value = NULL;
        int r;

        if (!name)
                return -ENOMEM;
        r = credential_read(dir, id, &value);
        if (r == -EBADMSG)
                text_error(error, "%s: credential '%s' is not text of at most %d bytes", name, id, CREDENTIAL_MAX);
        else if (r < 0)
                text_error(error, "%s: cannot read credential '%s' from %s: %s (is LoadCredential=%s:... in the unit?)", name,
                          id, dir, strerror(-r), id);
        if (r < 0)
                return r;
        r = setenv(name, value, 1) < 0 ? -errno : 0;
        explicit_bzero(value, strlen(value));
        free(value);
        return r;
}

int exec_credentials_apply(const struct exec_credentials *c, const char *dir, char **error) {
        if (c->n_pairs > 0 && (!dir || !*dir)) {
                text_error(error, "no $CREDENTIALS_DIRECTORY: the unit has no LoadCredential= for %s", c->pairs[0]);
                return -ENOENT;
        }
        for (size_t i = 0; i < c->n_pairs; i++) {
                int r = apply_one(c->pairs[i], dir, error);

                if (r < 0)
                        return r;
        }
        return 0;
}
