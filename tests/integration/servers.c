/* A test's config and its daemon; see servers.h. */
#include "servers.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static struct h_daemon *test_daemon;
static char servers[16384]; /* the "mcpServers" members */
static size_t servers_len;
static char settings[1024]; /* the "mcpvisor" members */

const char *sf(const char *fmt, ...) {
        static char bufs[8][1024];
        static unsigned next;
        char *buf = bufs[next++ % 8];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof bufs[0], fmt, ap);
        va_end(ap);
        return buf;
}

void servers_reset(struct h_daemon *d) {
        test_daemon = d;
        servers[0] = '\0';
        servers_len = 0;
        settings[0] = '\0';
}

void servers_teardown(void) {
        h_stop_draining(test_daemon, SIGTERM, H_TIMEOUT_MS);
        h_log_dump_if_verbose(test_daemon);
        cr_expect(h_cleanup(test_daemon), "the daemon did not stop with exit status 0");
}

void add_entry(const char *fmt, ...) {
        va_list ap;
        int n;

        if (servers_len)
                servers[servers_len++] = ',';
        va_start(ap, fmt);
        n = vsnprintf(servers + servers_len, sizeof servers - servers_len, fmt, ap);
        va_end(ap);
        cr_assert(n > 0 && (size_t)n < sizeof servers - servers_len, "config too long");
        servers_len += (size_t)n;
}

void add_demo(const char *name, const char *keys, const char *args) {
        add_entry("\"%s\":{\"command\":\"%s\",\"args\":[%s]%s%s}", name, h_demo_server_path(), args,
                  keys[0] ? "," : "", keys);
}

void set_settings(const char *members) {
        int n = snprintf(settings, sizeof settings, "%s", members);

        cr_assert(n >= 0 && (size_t)n < sizeof settings, "settings too long");
}

char *config_text(void) {
        char *config;

        /* "mcpvisor" only when set: most tests run on the defaults */
        cr_assert_geq(asprintf(&config, "{%s%s%s\"mcpServers\":{%s}}\n", settings[0] ? "\"mcpvisor\":{" : "",
                               settings, settings[0] ? "}," : "", servers),
                      0);
        return config;
}

void start(const char *const *env) {
        char *config = config_text();

        cr_assert_not_null(test_daemon, "servers_reset() was not called");
        h_start(test_daemon, &(struct h_opts){ .config = config, .env = env });
        free(config);
}

void wait_all_ready(unsigned n) {
        cr_assert(h_notify_wait(test_daemon, sf("STATUS=%u/%u servers ready", n, n), H_TIMEOUT_MS),
                  "not all %u servers became ready; got %s", n, test_daemon->notices);
}
