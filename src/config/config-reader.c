/* The configuration read off the loop; see config-reader.h. */
#include "config-reader.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

void config_read_done(struct config_read *read) {
        config_done(&read->config);
        problems_done(&read->problems);
}

/* The read itself, in whichever thread runs it: the eventfd says it is over. A write to
 * an eventfd fails only past 2^64 - 2 unread, which one write a read never reaches. */
static void read_now(struct config_reader *r) {
        uint64_t one = 1;

        r->result.r = config_load(r->path, r->missing_ok, &r->result.config, &r->result.problems);
        (void)!write(r->efd, &one, sizeof one);
}

static void *read_in_thread(void *userdata) {
        read_now(userdata);
        return NULL;
}

/* Every signal blocked in the thread, which inherits the mask it is created with: SIGHUP,
 * SIGTERM and SIGCHLD keep going to the loop's thread, where libevent takes them. The loop's
 * own mask is put back at once. The thread starts no process either: PR_SET_PDEATHSIG is
 * tied to the thread that spawned a server, which must be the loop's, that lives as long
 * as the daemon. */
static int start_thread(struct config_reader *r) {
        sigset_t all, old;
        int error;

        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        error = pthread_create(&r->thread, NULL, read_in_thread, r);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (error != 0)
                return -error;
        (void)pthread_setname_np(r->thread, "mcpvisord-read"); /* top -H, perf: what it is */
        r->thread_started = true;
        return 0;
}

/* The read is over: the thread is joined (which also makes what it wrote the loop's) and
 * the result handed on. */
static void take_result(struct config_reader *r, struct config_read *ret) {
        if (r->thread_started)
                pthread_join(r->thread, NULL);
        r->thread_started = false;
        r->reading = false;
        r->path = NULL;
        *ret = r->result;
        config_init_defaults(&r->result.config);
        r->result.problems = (struct config_problems){ 0 };
}

static void on_over(evutil_socket_t fd, short what, void *userdata) {
        struct config_reader *r = userdata;
        struct config_read result;
        uint64_t n;

        if (read(r->efd, &n, sizeof n) < 0 || !r->reading)
                return; /* EAGAIN: nothing over yet */
        take_result(r, &result);
        r->over_fn(&result, r->userdata);
}

int config_reader_init(struct config_reader *r, struct event_base *base, config_read_fn over_fn, void *userdata) {
        *r = (struct config_reader){ .over_fn = over_fn, .userdata = userdata };
        config_init_defaults(&r->result.config);
        r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->efd < 0)
                return -errno;
        r->over = event_new(base, r->efd, EV_READ | EV_PERSIST, on_over, r);
        if (!r->over || event_add(r->over, NULL) < 0) {
                if (r->over)
                        event_free(r->over);
                r->over = NULL;
                close(r->efd);
                return -ENOMEM;
        }
        return 0;
}

int config_reader_start(struct config_reader *r, const char *path, bool missing_ok) {
        int error = 0;

        if (r->reading)
                return -EBUSY;
        r->path = path;
        r->missing_ok = missing_ok;
        r->reading = true;
        if (!r->on_loop && (error = start_thread(r)) == 0)
                return 0;
        read_now(r);
        return error;
}

bool config_reader_busy(const struct config_reader *r) {
        return r->reading;
}

void config_reader_stay_on_loop(struct config_reader *r) {
        r->on_loop = true;
}

void config_reader_done(struct config_reader *r) {
        struct config_read result;

        if (!r->over)
                return;
        if (r->reading) {
                take_result(r, &result);
                config_read_done(&result);
        }
        event_free(r->over);
        r->over = NULL;
        close(r->efd);
}
