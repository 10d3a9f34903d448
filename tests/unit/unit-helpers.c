/* Helpers the unit tests share; see unit-helpers.h. */
#include "unit-helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"

static int log_fd = -1; /* where our stderr (the daemon's log) goes */
static int saved_stderr = -1;
static char log_path[64];
static char *log_text;

void log_capture_start(void) {
        /* With JOURNAL_STREAM set the logger would write to the journal instead. */
        unsetenv("JOURNAL_STREAM");
        snprintf(log_path, sizeof log_path, "/tmp/mcpvisor-unit-log-XXXXXX");
        log_fd = mkstemp(log_path);
        cr_assert_geq(log_fd, 0);
        fflush(stderr);
        saved_stderr = dup(STDERR_FILENO);
        cr_assert_geq(saved_stderr, 0);
        cr_assert_eq(dup2(log_fd, STDERR_FILENO), STDERR_FILENO);
}

void log_capture_stop(void) {
        free(log_text);
        log_text = NULL;
        unlink(log_path);
        close(log_fd);
        fflush(stderr);
        dup2(saved_stderr, STDERR_FILENO);
        close(saved_stderr);
}

const char *logged(void) {
        struct stat st;

        fflush(stderr);
        cr_assert_eq(fstat(log_fd, &st), 0);
        free(log_text);
        log_text = calloc(1, (size_t)st.st_size + 1);
        cr_assert_not_null(log_text);
        cr_assert_eq(pread(log_fd, log_text, (size_t)st.st_size, 0), st.st_size);
        return log_text;
}

unsigned occurrences(const char *haystack, const char *needle) {
        unsigned n = 0;

        for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static struct event_base *base;
static struct event *tick;

static void on_tick(evutil_socket_t fd, short what, void *userdata) {
}

struct event_base *loop_start(void) {
        base = event_base_new();
        cr_assert_not_null(base);
        tick = evtimer_new(base, on_tick, NULL);
        cr_assert_not_null(tick);
        return base;
}

void loop_stop(void) {
        event_free(tick);
        event_base_free(base);
}

void loop_once(void) {
        struct timeval tv = { .tv_sec = 0, .tv_usec = 50000 };

        evtimer_add(tick, &tv);
        event_base_loop(base, EVLOOP_ONCE);
}

void run_for(uint64_t usec) {
        uint64_t until = now_usec() + usec;

        while (now_usec() < until)
                loop_once();
}

void open_pipe(int fds[2], int flags) {
        cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
        if (flags & PIPE_READ_NONBLOCK)
                cr_assert_eq(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
        if (flags & PIPE_WRITE_NONBLOCK)
                cr_assert_eq(fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
}

void write_all(int fd, const void *data, size_t len) {
        const char *p = data;

        while (len > 0) {
                ssize_t k = write(fd, p, len);
                cr_assert_gt(k, 0, "write: %s", strerror(errno));
                p += k;
                len -= (size_t)k;
        }
}

static char tmpdir[64];

const char *tmpdir_make(void) {
        if (!tmpdir[0]) {
                snprintf(tmpdir, sizeof tmpdir, "/tmp/mcpvisor-unit-XXXXXX");
                cr_assert_not_null(mkdtemp(tmpdir));
        }
        return tmpdir;
}

const char *tmp_path(const char *name) {
        static char paths[8][256];
        static unsigned next;
        char *p = paths[next++ % 8];

        snprintf(p, sizeof paths[0], "%s/%s", tmpdir_make(), name);
        return p;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

void tmpdir_remove(void) {
        if (tmpdir[0])
                nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        tmpdir[0] = '\0';
}

static bool allocations_fail;

static void *failing_malloc(size_t size) {
        return allocations_fail ? NULL : malloc(size);
}

static void *failing_realloc(void *p, size_t size) {
        return allocations_fail ? NULL : realloc(p, size);
}

void failing_allocator_install(void) {
        event_set_mem_functions(failing_malloc, failing_realloc, free);
}

void failing_allocations(bool fail) {
        allocations_fail = fail;
}

struct catalog_list *list_of(int kind, const char *array) {
        struct catalog_list *l = catalog_list_new();
        unsigned refused = 0;

        cr_assert_not_null(l);
        cr_assert_eq(catalog_list_add_array(l, kind, array, strlen(array), SIZE_MAX, &refused), 0, "%s", array);
        cr_assert_eq(refused, 0, "items refused in %s", array);
        return l;
}

const char *key_at(const struct catalog_list *l, size_t i) {
        cr_assert_lt(i, l->n);
        return catalog_item_key(l->items[i]);
}
