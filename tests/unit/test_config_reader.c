/* The configuration read off the loop (config-reader.c): a read in a thread, its result
 * handed to the loop's callback on a later turn, one read at a time, a read given up at the
 * end joined and freed, and reads kept in the loop's thread (the fuzz harness's). Under ASan
 * each test also proves no result is leaked. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config-reader.h"
#include "unit-helpers.h"

struct seen {
        unsigned calls;
        struct config_read last;
        struct config_reader *chain; /* start another read from the callback, once */
        const char *chain_path;
};

static void on_over(struct config_read *read, void *userdata) {
        struct seen *s = userdata;

        if (s->calls++ > 0)
                config_read_done(&s->last);
        s->last = *read;
        if (s->chain) {
                cr_assert_eq(config_reader_start(s->chain, s->chain_path, false), 0);
                s->chain = NULL;
        }
}

static const char *write_file(const char *name, const char *text) {
        const char *path = tmp_path(name);
        FILE *f = fopen(path, "we");

        cr_assert_not_null(f);
        fputs(text, f);
        cr_assert_eq(fclose(f), 0);
        return path;
}

static struct event_base *base;
static struct config_reader reader;
static struct seen seen;

static void setup(void) {
        base = loop_start();
        seen = (struct seen){ 0 };
        cr_assert_eq(config_reader_init(&reader, base, on_over, &seen), 0);
}

static void teardown(void) {
        config_reader_done(&reader);
        if (seen.calls > 0)
                config_read_done(&seen.last);
        loop_stop();
        tmpdir_remove();
}

TestSuite(config_reader, .init = setup, .fini = teardown);

Test(config_reader, result_reaches_the_loop) {
        const char *path = write_file("a.json", "{\"mcpServers\": {\"a\": {\"command\": \"cat\"}}}");

        cr_assert_eq(config_reader_start(&reader, path, false), 0);
        cr_assert(config_reader_busy(&reader));
        WAIT_UNTIL(seen.calls == 1);
        cr_assert_not(config_reader_busy(&reader));
        cr_assert_eq(seen.last.r, 0);
        cr_assert_eq(seen.last.problems.count, 0);
        cr_assert_eq(seen.last.config.n_servers, 1);
        cr_assert_str_eq(seen.last.config.servers[0].name, "a");
        run_for(50000);
        cr_assert_eq(seen.calls, 1, "one read, one call");
}

/* What config_load() says, as it says it: problems with their paths, the return. */
Test(config_reader, problems_and_errors_as_config_load_says) {
        const char *bad = write_file("bad.json", "{\"mcpvisor\": {\"surprise\": 1}, \"mcpServers\": {}}");

        cr_assert_eq(config_reader_start(&reader, bad, false), 0);
        WAIT_UNTIL(seen.calls == 1);
        cr_assert_eq(seen.last.r, -EINVAL);
        cr_assert_eq(seen.last.problems.errors, 1);
        cr_assert_str_eq(seen.last.problems.items[0].path, "mcpvisor.surprise");
        cr_assert_eq(seen.last.config.n_servers, 0, "a failed read leaves the defaults");

        cr_assert_eq(config_reader_start(&reader, tmp_path("none.json"), false), 0);
        WAIT_UNTIL(seen.calls == 2);
        cr_assert_eq(seen.last.r, -ENOENT);
        cr_assert_eq(seen.last.problems.errors, 1);

        cr_assert_eq(config_reader_start(&reader, tmp_path("none.json"), true), 0);
        WAIT_UNTIL(seen.calls == 3);
        cr_assert_eq(seen.last.r, 0, "missing_ok: no file, no servers");
        cr_assert_eq(seen.last.problems.errors, 0);
}

Test(config_reader, one_read_at_a_time) {
        const char *path = write_file("a.json", "{\"mcpServers\": {}}");

        cr_assert_eq(config_reader_start(&reader, path, false), 0);
        cr_assert_eq(config_reader_start(&reader, path, false), -EBUSY);
        WAIT_UNTIL(seen.calls == 1);
        cr_assert_eq(seen.last.r, 0);
        run_for(50000);
        cr_assert_eq(seen.calls, 1, "the refused start read nothing");
}

/* reload.c starts the next read from the callback of the last. */
Test(config_reader, next_read_started_from_the_callback) {
        const char *a = write_file("a.json", "{\"mcpServers\": {\"a\": {\"command\": \"cat\"}}}");
        const char *b = write_file("b.json", "{\"mcpServers\": {\"b\": {\"command\": \"cat\"}, \"c\": {\"command\": \"cat\"}}}");

        seen.chain = &reader;
        seen.chain_path = b;
        cr_assert_eq(config_reader_start(&reader, a, false), 0);
        WAIT_UNTIL(seen.calls == 2);
        cr_assert_eq(seen.last.config.n_servers, 2);
        cr_assert_not(config_reader_busy(&reader));
}

/* The end while a read runs: joined and freed, and no callback. */
Test(config_reader, read_given_up_at_the_end) {
        const char *path = write_file("a.json", "{\"mcpServers\": {\"a\": {\"command\": \"cat\"}}}");

        cr_assert_eq(config_reader_start(&reader, path, false), 0);
        config_reader_done(&reader);
        cr_assert_eq(seen.calls, 0);
        config_reader_done(&reader); /* the fini's, again: nothing */
}

/* The fuzz harness's: the read is done in start, its result still comes on a loop turn. */
Test(config_reader, stay_on_loop) {
        const char *path = write_file("a.json", "{\"mcpServers\": {\"a\": {\"command\": \"cat\"}}}");

        config_reader_stay_on_loop(&reader);
        cr_assert_eq(config_reader_start(&reader, path, false), 0);
        cr_assert_eq(seen.calls, 0, "not inside start");
        cr_assert(config_reader_busy(&reader));
        cr_assert_eq(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
        cr_assert_eq(seen.calls, 1, "on the next turn");
        cr_assert_eq(seen.last.config.n_servers, 1);
}

/* A reader whose init never ran (a daemon that failed to start early) is safe to end. */
Test(config_reader, zeroed_reader_ends_quietly) {
        struct config_reader zero = { 0 };

        config_reader_done(&zero);
}
