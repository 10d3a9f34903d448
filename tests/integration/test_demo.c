/* The demo of the README, as ./scripts/demo runs it: demo/mcpvisor.json, its servers found
 * by name on PATH. Both start, and the daemon has nothing to warn about (the two copies of the
 * demo server must not offer the same resource URIs). */
#include <criterion/criterion.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "servers.h"

#define DEMO_CONFIG MCPVISOR_SOURCE_DIR "/demo/mcpvisor.json"

static struct h_daemon D;

static void setup(void) {
        D.notify_fd = -1; /* nothing to close if a test ends before its daemon starts */
        servers_reset(&D);
}

TestSuite(demo, .init = setup, .fini = servers_teardown, .timeout = 30);

static char *demo_config(void) {
        json_object *o = json_object_from_file(DEMO_CONFIG);
        char *text;

        cr_assert_not_null(o, "%s: %s", DEMO_CONFIG, json_util_get_last_err());
        text = strdup(json_object_to_json_string(o));
        json_object_put(o);
        return text;
}

Test(demo, starts_without_a_warning) {
        char bin[PATH_MAX], *config = demo_config(), *log;
        struct h_client *c;

        /* scripts/demo puts build/bin first on PATH; the daemon passes PATH on to its servers */
        snprintf(bin, sizeof bin, "%s", h_demo_server_path());
        cr_assert(setenv("PATH", sf("%s:%s", dirname(bin), getenv("PATH") ?: "/usr/bin:/bin"), 1) == 0);
        h_start(&D, &(struct h_opts){ .config = config });
        free(config);
        cr_assert(h_notify_wait(&D, "STATUS=2/2 servers ready", H_TIMEOUT_MS), "got %s", D.notices);
        c = cl_open(); /* a round trip: whatever the daemon logs on the way to ready is written */
        h_client_call(c, "1", "tools/list", NULL);
        h_client_close(c);
        log = h_log_text(&D);
        cr_expect_null(strstr(log, ": warning: "), "the demo prints a warning:\n%s", log);
        cr_expect_null(strstr(log, ": err: "), "the demo prints an error:\n%s", log);
        free(log);
}
