/* The Unix socket transport of a client (client.h): newline-delimited JSON-RPC read from the
 * socket into a framer, replies written through a bufferevent, each at once when nothing is
 * queued before it (write-now.h). */
#pragma once

#include <sys/socket.h>

#include "listen.h"

struct client;
struct daemon;

/* A client for an accepted connection (fd taken) whose peer credentials listen.c read.
 * Returns NULL (fd closed) when out of memory. */
struct client *client_socket_new(struct daemon *d, int fd, const struct ucred *peer, enum listen_role role);
