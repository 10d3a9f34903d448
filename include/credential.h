/* A systemd credential read as the text of an environment variable: what the daemon does
 * with $CREDENTIALS_DIRECTORY for the exec launcher, and what mcpvisor-exec-credentials
 * does inside a server's unit for the systemd launcher, so that both read a secret the
 * same way. Plain file reads: linked into the helper alone. */
#pragma once

/* Credentials are small secrets; a bigger file is a mistake, not a token. */
#define CREDENTIAL_MAX (64 * 1024)

/* Reads dir/id into *ret (malloc'd, NUL-terminated), without the one trailing newline a
 * file written with echo ends in. -EBADMSG for a file over CREDENTIAL_MAX bytes or one
 * holding a NUL byte (it cannot be a variable's value); other negative errnos from
 * open() and read(). */
int credential_read(const char *dir, const char *id, char **ret);

/* The daemon's read of credential id for a setting (kind "env" or "header", and its name),
 * from dir, its $CREDENTIALS_DIRECTORY (NULL: it has none). As credential_read(), and
 * -ENOENT when there is no dir; on failure *error (malloc'd) names the setting and the
 * credential, never a value, and says where the credential is given. */
int credential_read_for(const char *kind, const char *name, const char *dir, const char *id, char **ret,
                        char **error);
