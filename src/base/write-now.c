/* One outgoing message written at once; see write-now.h. */
#include "write-now.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <limits.h>

/* An error or a full descriptor writes nothing here: the bufferevent meets the same
 * condition when it writes the queued message, and handles it as it always has. */
static size_t try_write(struct bufferevent *bev, const struct iovec *parts, size_t n_parts) {
        evutil_socket_t fd = bufferevent_getfd(bev);
        ssize_t n;

        if (fd < 0 || n_parts > IOV_MAX || evbuffer_get_length(bufferevent_get_output(bev)) > 0)
                return 0;
        do
                n = writev(fd, parts, (int)n_parts);
        while (n < 0 && errno == EINTR);
        return n > 0 ? (size_t)n : 0;
}

int write_now(struct bufferevent *bev, const struct iovec *parts, size_t n_parts) {
        struct evbuffer *out = bufferevent_get_output(bev);
        size_t written = try_write(bev, parts, n_parts), rest = 0;

        for (size_t i = 0; i < n_parts; i++)
                rest += parts[i].iov_len;
        rest -= written;
        if (rest > 0 && evbuffer_expand(out, rest) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n_parts; i++) {
                size_t skip = written < parts[i].iov_len ? written : parts[i].iov_len;

                written -= skip;
                if (parts[i].iov_len > skip && evbuffer_add(out, (const char *)parts[i].iov_base + skip, parts[i].iov_len - skip) < 0)
                        return -ENOMEM;
        }
        return 0;
}
