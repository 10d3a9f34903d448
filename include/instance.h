/* One run of a server: its process, the MCP connection on its stdin/stdout, and the
 * reader of its stderr. A server makes a new instance for every start; an ended instance
 * is retired (its connection closed at once, so nobody waits on it) and freed by the
 * supervisor between loop iterations, never inside its own callbacks. */
#pragma once

#include <stdint.h>
#include <sys/queue.h>

#include "process.h"
#include "stderr-reader.h"

struct server;
struct child;
struct child_ops;

struct instance {
        TAILQ_ENTRY(instance) entry;
        struct server *server;
        uint64_t number;              /* daemon-unique; MCPVISOR_INSTANCE= in its environment */
        struct process proc;
        struct child *child;
        struct stderr_reader err;
        uint64_t started_at;          /* usec, monotonic */
};

TAILQ_HEAD(instance_list, instance);

/* Builds the environment, finds the program and spawns it. On failure *error (malloc'd)
 * says what to fix and the return is the cause (-ENOENT, -EACCES, -EAGAIN, ...). */
int instance_start(struct server *s, uint64_t number, const struct child_ops *ops, struct instance **ret,
                   char **error);
/* After the process was reaped: logs its last stderr, closes its connection (pending
 * requests fail) and queues it for freeing. */
void instance_retire(struct instance *in, struct instance_list *retired);
void instance_free(struct instance *in);
