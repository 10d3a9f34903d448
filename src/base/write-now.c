/* One outgoing message written at once; see write-now.h. */
#include "write-now.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <limits.h>

#include "loan.h"

/* Bytes of one part from which it is kept by reference rather than copied: a loan costs its
 * lender a buffer (the framer moves on to a new one), which a small part is not worth. */
#define LEND_MIN_BYTES (64 * 1024)

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

int buffer_add_lent(struct evbuffer *out, const void *p, size_t len, const struct loan_offer *offer) {
        struct loan *l = len >= LEND_MIN_BYTES ? loan_take(offer, p, len) : NULL;

        if (!l)
                return evbuffer_add(out, p, len) < 0 ? -ENOMEM : 0;
        if (evbuffer_add_reference(out, p, len, loan_release_cb, l) < 0) {
                loan_put(l);
                return -ENOMEM;
        }
        return 0;
}

int write_now(struct bufferevent *bev, const struct iovec *parts, size_t n_parts, const struct loan_offer *offer) {
        struct evbuffer *out = bufferevent_get_output(bev);
        size_t written = try_write(bev, parts, n_parts);

        for (size_t i = 0; i < n_parts; i++) {
                size_t skip = written < parts[i].iov_len ? written : parts[i].iov_len;

                written -= skip;
                if (parts[i].iov_len > skip &&
                    buffer_add_lent(out, (const char *)parts[i].iov_base + skip, parts[i].iov_len - skip, offer) < 0)
                        return -ENOMEM;
        }
        return 0;
}
