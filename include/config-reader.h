/* The configuration read off the loop: config_load() of 1,000 servers costs 3 to
 * 7 ms of CPU, which in the loop's thread was one stall of every client. A reload's read runs
 * in a thread of its own, which touches nothing but the read's own result, and hands it back
 * to the loop through an eventfd: the loop joins the thread and calls the completion
 * callback. One read at a time.
 *
 * config_load() is safe there: it opens, reads and closes its files (O_CLOEXEC), parses into
 * json-c objects of its own (json-c's one global, its hash seed, is set by the start-up's
 * read and only read after), looks users and groups up with getpwnam_r()/getgrnam_r(),
 * reads the environment (which the daemon never changes), and formats errors with
 * strerror(), whose text for an unknown error is a buffer of the calling thread in glibc
 * since 2.32; it logs nothing, uses no libevent and starts no process. */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "config.h"

struct event_base;
struct event;

/* What one read found: config_load()'s return and what it filled in (config is valid, and
 * to be freed, whatever r is: defaults when the read failed). */
struct config_read {
        int r;
        struct config config;
        struct config_problems problems;
};

void config_read_done(struct config_read *read);

/* Called on the loop once a read is over; *read is the callee's (config_read_done()). The
 * callee may start the next read. */
typedef void (*config_read_fn)(struct config_read *read, void *userdata);

struct config_reader {
        struct event *over;          /* efd readable: the read is over; NULL: not initialized */
        int efd;                     /* eventfd, O_CLOEXEC: written once a read is over; open
                                      * exactly while over is set */
        bool reading;                /* started, its completion not yet called */
        bool thread_started;         /* a thread to join */
        bool on_loop;                /* reads in the loop's thread (config_reader_stay_on_loop) */
        pthread_t thread;
        /* The read's own: the thread's alone while it runs, the loop's once it has ended. */
        const char *path;            /* borrowed: must not change while a read runs */
        bool missing_ok;
        struct config_read result;
        config_read_fn over_fn;
        void *userdata;
};

int config_reader_init(struct config_reader *r, struct event_base *base, config_read_fn over_fn, void *userdata);
/* Starts a read of path and its drop-ins; path must stay as it is until over_fn is called
 * (the daemon's never changes). over_fn is called on a later loop turn. Never fails to
 * read: when no thread can be started, the files are read here, in the loop's thread, and
 * the return is that negative errno (for the caller to log); else 0. -EBUSY, and nothing
 * started, while a read is under way (config_reader_busy()). */
int config_reader_start(struct config_reader *r, const char *path, bool missing_ok);
bool config_reader_busy(const struct config_reader *r);
/* Every read from now on in the loop's thread, its completion still on a later loop turn:
 * the fuzz harness's, so that an input replays the same way. */
void config_reader_stay_on_loop(struct config_reader *r);
/* Joins a read under way (short: it only reads files) and discards its result; over_fn is
 * not called. Safe on a zeroed reader whose init never ran or failed (over is NULL then). */
void config_reader_done(struct config_reader *r);
