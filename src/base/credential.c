/* Reading a credential as text; see credential.h. */
#include "credential.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "text.h"

int credential_read(const char *dir, const char *id, char **ret) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        _cleanup_close_ int fd = -1;
        ssize_t len;

        if (asprintf(&path, "%s/%s", dir, id) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        buf = malloc(CREDENTIAL_MAX + 1);
        if (!buf)
                return -ENOMEM;
        len = read(fd, buf, CREDENTIAL_MAX + 1);
        if (len < 0)
                return -errno;
        if (len > CREDENTIAL_MAX || memchr(buf, '\0', (size_t)len))
                return -EBADMSG;
        /* Files written with echo end in a newline that is not part of the secret. */
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

int credential_read_for(const char *kind, const char *name, const char *dir, const char *id, char **ret,
                        char **error) {
        int r;

        if (!dir) {
                text_error(error, "%s %s needs credential '%s', but the daemon has no credentials "
                                  "(add LoadCredential=%s:/path/to/secret or SetCredential= to mcpvisor.service)",
                           kind, name, id, id);
                return -ENOENT;
        }
        r = credential_read(dir, id, ret);
        if (r == -EBADMSG)
                text_error(error, "%s %s: credential '%s' is not text of at most %d bytes", kind, name, id, CREDENTIAL_MAX);
        else if (r < 0)
                text_error(error, "%s %s: cannot read credential '%s' from %s: %s (check LoadCredential= in mcpvisor.service)",
                           kind, name, id, dir, strerror(-r));
        return r;
}
