/* One outgoing message written at once. A bufferevent writes on the next loop iteration:
 * queuing enables EPOLLOUT (epoll_ctl), the loop wakes to write, and the emptied buffer
 * disables it again (epoll_ctl), for every message. With nothing queued before it, a
 * message is written straight to the descriptor instead, and only what the descriptor
 * does not take is queued, to go out as before. */
#pragma once

#include <stddef.h>
#include <sys/uio.h>

struct bufferevent;

/* Writes the parts of one message to bev's descriptor, or queues them after what is
 * queued already. Returns 0, or -ENOMEM if the rest could not be queued: the peer may then
 * have part of a line, so the caller must end the connection. */
int write_now(struct bufferevent *bev, const struct iovec *parts, size_t n_parts);
