/* Helpers the unit tests share: the daemon's log captured from stderr, an event loop run
 * until a condition or a deadline, pipes as instance.c makes them, and a directory of the
 * test's own. Their state lives here, once per test: Criterion runs each test in a
 * process of its own. Failures are Criterion assertions. */
#pragma once

#include <criterion/criterion.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "time-util.h"

/* The log */

/* Points stderr at a new file, with no journal, so what the daemon logs can be read back. */
void log_capture_start(void);
/* Back to the real stderr, where sanitizer reports at exit must go; removes the file. */
void log_capture_stop(void);
/* All the daemon logged so far; valid until the next call (one snapshot per expression). */
const char *logged(void);
/* How often needle stands in haystack, without overlaps. */
unsigned occurrences(const char *haystack, const char *needle);

/* The event loop */

#define WAIT_USEC (10 * USEC_PER_SEC)

/* A new event_base for the test; loop_stop frees it. */
struct event_base *loop_start(void);
void loop_stop(void);
/* One round of the loop; a timer makes sure it returns even when nothing happens. */
void loop_once(void);
/* Runs the loop for usec without expecting anything; for "X does not happen". */
void run_for(uint64_t usec);

/* Runs the loop until cond holds, failing the test after WAIT_USEC. A macro, so that cond
 * is evaluated afresh each round and the failure names it. */
#define WAIT_UNTIL(cond)                                                        \
        do {                                                                    \
                uint64_t deadline_ = now_usec() + WAIT_USEC;                    \
                while (!(cond) && now_usec() < deadline_)                       \
                        loop_once();                                            \
                cr_assert(cond, "timed out waiting for: %s", #cond);            \
        } while (0)

/* Pipes */

enum { PIPE_READ_NONBLOCK = 1 << 0, PIPE_WRITE_NONBLOCK = 1 << 1 };

/* An O_CLOEXEC pipe, as instance.c makes them, with the ends flags names non-blocking. */
void open_pipe(int fds[2], int flags);
/* Writes all of data to a blocking fd. */
void write_all(int fd, const void *data, size_t len);

/* A directory of the test's own */

/* Made on the first call; the same path after. */
const char *tmpdir_make(void);
/* A path inside it; the result lives until the test ends. */
const char *tmp_path(const char *name);
/* Removes it with all it holds, if it was made. */
void tmpdir_remove(void);

/* libevent's allocations, failing on demand */

/* Routes libevent's allocations through functions that fail while failing_allocations()
 * says so. Call before anything of libevent's is made (first in a test's .init). */
void failing_allocator_install(void);
void failing_allocations(bool fail);

/* Catalogues (catalog.h) */

struct catalog_list;
/* A list of kind (a catalog_kind) read from the JSON array text, with one reference;
 * every element must be an item of kind. */
struct catalog_list *list_of(int kind, const char *array);
/* The key (name, URI, template) of item i of l. */
const char *key_at(const struct catalog_list *l, size_t i);
