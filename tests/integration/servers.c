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
        h_teardown_expect(h_cleanup(test_daemon), "the daemon did not stop with exit status 0");
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

void start_with(const struct h_opts *o) {
        struct h_opts opts = *o;
        char *config = config_text();

        cr_assert_not_null(test_daemon, "servers_reset() was not called");
        opts.config = config;
        h_start(test_daemon, &opts);
        free(config);
}

void start(const char *const *env) {
        start_with(&(struct h_opts){ .env = env });
}

void start_nofile(unsigned nofile) {
        start_with(&(struct h_opts){ .nofile = nofile });
}

void start_logging_to_journal(void) {
        start_with(&(struct h_opts){ .journal_stream = true });
}

void wait_all_ready(unsigned n) {
        cr_assert(h_notify_wait(test_daemon, sf("STATUS=%u/%u servers ready", n, n), H_TIMEOUT_MS),
                  "not all %u servers became ready; got %s", n, test_daemon->notices);
}

struct h_client *cl_open(void) {
        return h_client_open(test_daemon, false, NULL);
}

struct h_client *cl_open_with(const char *capabilities) {
        return h_client_open_with(test_daemon, capabilities, NULL);
}

struct h_client *start_one_demo(const char *name, const char *capabilities) {
        add_demo(name, "", "");
        start(NULL);
        wait_all_ready(1);
        return capabilities ? cl_open_with(capabilities) : cl_open();
}

/* ---- For fault-injection tests; see servers.h ---- */

#include <poll.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* How much the daemon's RSS may grow over a fault once it is back at its baseline: glibc
 * keeps freed memory in its heap, so the peak of a fault stays (a few hundred KiB over these
 * tests on an idle machine; up to 5 MiB when the daemon falls behind a storm of connections
 * on a loaded one, where it levels off however long the storm). Under ASan freed memory waits in the quarantine (up to 256 MiB) before it is
 * reused, so RSS says nothing there: it is not checked (-1), and LeakSanitizer checks each
 * daemon at its exit instead. */
#ifdef __SANITIZE_ADDRESS__
#define BASELINE_RSS_SLACK_KB (-1L)
#else
#define BASELINE_RSS_SLACK_KB (8 * 1024L)
#endif

const char *tag_entry(void) {
        static char entry[96];

        if (!entry[0])
                snprintf(entry, sizeof entry, "MCPVISOR_IT_TAG=%d-%lld", (int)getpid(), h_now_ms());
        return entry;
}

void add_tagged(const char *name, const char *keys, const char *args) {
        const char *value = strchr(tag_entry(), '=') + 1;

        add_demo(name, sf("\"env\":{\"MCPVISOR_IT_TAG\":\"%s\"}%s%s", value, keys[0] ? "," : "", keys), args);
}

void config_rewrite(void) {
        char *text = config_text();
        FILE *f = fopen(test_daemon->config, "we");

        cr_assert_not_null(f, "cannot write %s", test_daemon->config);
        fputs(text, f);
        cr_assert_eq(fclose(f), 0);
        free(text);
}

/* Polls cond until it holds or the deadline passes, draining NOTIFY datagrams meanwhile. */
static bool wait_for(bool (*cond)(const void *arg), const void *arg, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                h_notify_drain(test_daemon);
                if (cond(arg))
                        return true;
                if (h_now_ms() >= deadline)
                        return false;
                poll(NULL, 0, 20); /* /proc has no readiness to wait on */
        }
}

static bool procs_are(const void *arg) {
        return h_count_processes_with_env(tag_entry()) == *(const unsigned *)arg;
}

static bool no_zombie(const void *arg) {
        return h_count_children(test_daemon->pid, true) == 0;
}

static bool fds_are(const void *arg) {
        return proc_fd_count(test_daemon->pid) == *(const int *)arg;
}

struct baseline baseline_take(unsigned procs) {
        struct baseline b = { .procs = procs };

        cr_assert(wait_for(procs_are, &procs, H_TIMEOUT_MS), "%u tagged processes run, not %u",
                  h_count_processes_with_env(tag_entry()), procs);
        cr_assert(wait_for(no_zombie, NULL, H_TIMEOUT_MS), "the daemon has a zombie child");
        b.fds = proc_fd_count(test_daemon->pid);
        b.rss_kb = proc_rss_kib(test_daemon->pid);
        cr_assert(b.fds > 0 && b.rss_kb > 0, "cannot read the daemon's /proc entries");
        return b;
}

long baseline_expect(const struct baseline *b) {
        long rss;

        cr_assert(wait_for(procs_are, &b->procs, 2 * H_TIMEOUT_MS), "%u tagged processes run, not %u as before",
                  h_count_processes_with_env(tag_entry()), b->procs);
        cr_assert(wait_for(no_zombie, NULL, H_TIMEOUT_MS), "the daemon has a zombie child");
        cr_assert(wait_for(fds_are, &b->fds, 2 * H_TIMEOUT_MS), "the daemon holds %d descriptors, not %d as before",
                  proc_fd_count(test_daemon->pid), b->fds);
        rss = proc_rss_kib(test_daemon->pid);
        /* Not under valgrind (MCPVISOR_IT_WRAPPER), whose own memory moves RSS by tens of MiB. */
        if (BASELINE_RSS_SLACK_KB >= 0 && !getenv("MCPVISOR_IT_WRAPPER"))
                cr_assert_leq(rss - b->rss_kb, BASELINE_RSS_SLACK_KB, "the daemon's RSS grew from %ld to %ld KiB",
                              b->rss_kb, rss);
        if (getenv("H_VERBOSE"))
                fprintf(stderr, "baseline: %d fds, RSS %ld -> %ld KiB\n", b->fds, b->rss_kb, rss);
        return rss - b->rss_kb;
}

/* Tagged processes left once the daemon is gone, waiting a moment for the last to end. */
static unsigned orphans(void) {
        unsigned left = h_count_processes_with_env(tag_entry());

        for (long long deadline = h_now_ms() + H_TIMEOUT_MS; left && h_now_ms() < deadline;
             left = h_count_processes_with_env(tag_entry()))
                poll(NULL, 0, 20); /* /proc has no readiness to wait on */
        return left;
}

void stop_clean(void) {
        int status = h_stop_draining(test_daemon, SIGTERM, 2 * H_TIMEOUT_MS);
        unsigned left;

        cr_assert(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the daemon did not stop with exit status 0 (wait status %d); see %s", status, test_daemon->log);
        left = orphans();
        cr_assert_eq(left, 0, "%u processes started by the servers outlived the daemon", left);
}

void teardown_no_orphans(void) {
        unsigned left;

        servers_teardown();
        left = orphans();
        h_teardown_expect(left == 0, "processes started by the servers outlived the daemon");
}

#define LOAD_CLIENTS 3
#define LOAD_WINDOW 4  /* requests in flight per client */
#define LOAD_WARMUP 40 /* requests per client before the baseline */

struct h_load *start_loaded(unsigned n, const struct h_call_kind *kinds, size_t n_kinds) {
        struct h_load *l;

        start(NULL);
        wait_all_ready(n);
        l = h_load_new(test_daemon, LOAD_CLIENTS, LOAD_WINDOW, kinds, n_kinds);
        h_load_add(l, LOAD_WARMUP);
        h_load_finish(l, LOAD_MS);
        return l;
}

void load_until_log(struct h_load *l, const char *needle, unsigned n) {
        long long deadline = h_now_ms() + FAULT_MS;

        while (h_log_count(test_daemon, needle) < n) {
                cr_assert_lt(h_now_ms(), deadline, "not %u times in the log under load: %s", n, needle);
                if (h_load_pump(l, 50))
                        h_load_add(l, 4);
        }
}

/* ---- TLS for servers reached by URL ---- */

void make_ca(const char *dir, const char *name) {
        const char *cmd = sf("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                             "-keyout %s.key -out %s.pem -days 1 -subj /CN=%s >/dev/null 2>&1",
                             dir, name, name, name);

        cr_assert_eq(system(cmd), 0, "%s", cmd);
}

void make_server_certificate(const char *dir, const char *ca) {
        const char *cmd = sf("cd %s && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' >san.ext && "
                             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key "
                             "-out srv.csr -subj /CN=localhost >/dev/null 2>&1 && "
                             "openssl x509 -req -in srv.csr -CA %s.pem -CAkey %s.key -CAcreateserial -out srv.pem "
                             "-days 1 -extfile san.ext >/dev/null 2>&1",
                             dir, ca, ca);

        cr_assert_eq(system(cmd), 0, "%s", cmd);
}
