/* One outgoing message written at once. A bufferevent writes on the next loop iteration:
 * queuing enables EPOLLOUT (epoll_ctl), the loop wakes to write, and the emptied buffer
 * disables it again (epoll_ctl), for every message. With nothing queued before it, a
 * message is written straight to the descriptor instead, and only what the descriptor
 * does not take is queued, to go out as before. */
#pragma once

#include <stddef.h>
#include <sys/uio.h>

struct bufferevent;
struct evbuffer;
struct loan_offer;

/* Writes the parts of one message to bev's descriptor, or queues them after what is
 * queued already: a large part whose bytes offer holds (loan.h; NULL: none) by reference,
 * the rest copied. Returns 0, or -ENOMEM if the rest could not be queued: the peer may then
 * have part of a line, so the caller must end the connection. */
int write_now(struct bufferevent *bev, const struct iovec *parts, size_t n_parts, const struct loan_offer *offer);

/* Appends len bytes at p to out: by reference when offer holds them and they are large
 * enough to be worth it (the loan's reference goes with them, dropped once they are
 * written or the buffer freed), else copied. 0 or -ENOMEM. */
int buffer_add_lent(struct evbuffer *out, const void *p, size_t len, const struct loan_offer *offer);
