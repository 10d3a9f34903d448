/* Reading a credential as text; see credential.h. */
#include "credential.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

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
