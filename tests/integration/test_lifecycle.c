/* The daemon as systemd sees it: activation, its own bind, READY/STATUS/WATCHDOG/STOPPING,
 * signals and exit codes, and the command line. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct h_daemon D;

static void stop(void) {
        h_log_dump_if_verbose(&D);
        h_cleanup(&D);
}

TestSuite(lifecycle, .fini = stop, .timeout = 30);

static void ping_ok(const char *path) {
        struct h_conn *c = h_connect(path, H_TIMEOUT_MS);
        h_expect_result(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        h_close(c);
}

static bool exited_cleanly(int status) {
        return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Test(lifecycle, own_bind_ready_status_and_clean_sigterm) {
        struct stat st;

        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS), "no READY=1; got %s", D.notices);
        cr_assert_eq(D.notify_sender, D.pid, "READY=1 must come from the main pid");
        cr_assert(strstr(D.notices, "STATUS="), "no STATUS= line");
        cr_assert_eq(stat(D.sock, &st), 0);
        cr_assert(S_ISSOCK(st.st_mode));
        cr_assert_eq(st.st_mode & 0777, 0660, "socket mode %o", st.st_mode & 0777);
        ping_ok(D.sock);
        ping_ok(D.control);

        cr_assert(exited_cleanly(h_stop(&D, SIGTERM, H_TIMEOUT_MS)), "SIGTERM did not end in exit 0");
        cr_assert(h_notify_wait(&D, "STOPPING=1", 0), "no STOPPING=1");
        cr_assert_neq(stat(D.sock, &st), 0, "our own socket node was left behind");
}

Test(lifecycle, status_follows_clients) {
        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        cr_assert(h_notify_wait(&D, "STATUS=no servers configured; 1 client connected", H_TIMEOUT_MS), "got %s", D.notices);
        h_close(c);
        cr_assert(h_notify_wait(&D, "STATUS=no servers configured; 0 clients connected|", H_TIMEOUT_MS), "got %s", D.notices);
}

/* Clients that close in one loop iteration change STATUS= once, not once each: the daemon
 * is stopped while they close, so their ends of input are all ready when it resumes (fewer
 * than libevent's first epoll batch of 32). */
Test(lifecycle, status_once_for_clients_closed_together) {
        enum { N = 24 };
        struct h_conn *c[N];
        char state = 0;

        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        for (int i = 0; i < N; i++)
                c[i] = h_connect(D.sock, H_TIMEOUT_MS);
        cr_assert(h_notify_wait(&D, "STATUS=no servers configured; 24 clients connected", H_TIMEOUT_MS), "got %s",
                  D.notices);
        unsigned before = h_notify_count(&D, "STATUS=");
        cr_assert_eq(kill(D.pid, SIGSTOP), 0);
        /* kill() returns before the stop takes: a close seen before it would be a burst of its own */
        for (long long deadline = h_now_ms() + H_TIMEOUT_MS; !(h_proc_stat(D.pid, &state, NULL, NULL) && state == 'T');)
                cr_assert_lt(h_now_ms(), deadline, "the daemon did not stop");
        for (int i = 0; i < N; i++)
                h_close(c[i]);
        cr_assert_eq(kill(D.pid, SIGCONT), 0);
        cr_assert(h_notify_wait(&D, "STATUS=no servers configured; 0 clients connected|", H_TIMEOUT_MS), "got %s",
                  D.notices);
        cr_assert_eq(h_notify_count(&D, "STATUS=") - before, 1, "STATUS= sent more than once for one burst:\n%s",
                     D.notices);
}

Test(lifecycle, socket_mode_from_config) {
        struct stat st;

        h_start(&D, &(struct h_opts){ .config = "{\"mcpvisor\":{\"socketMode\":\"0600\"}}" });
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        cr_assert_eq(stat(D.sock, &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0600, "socket mode %o", st.st_mode & 0777);
}

Test(lifecycle, sigint_stops_cleanly_with_a_client_connected) {
        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        cr_assert(exited_cleanly(h_stop(&D, SIGINT, H_TIMEOUT_MS)), "SIGINT did not end in exit 0");
        cr_assert(h_wait_eof(c, H_TIMEOUT_MS, NULL), "the client was not disconnected");
        h_close(c);
}

Test(lifecycle, refuses_to_start_beside_a_live_daemon) {
        struct h_daemon second;
        char log[4096] = "";

        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        /* same socket path, via extra args overriding the harness's own --socket */
        const char *args[] = { "--socket", D.sock, NULL };
        h_start(&second, &(struct h_opts){ .extra_args = args });
        int status = h_wait_exit(&second, H_TIMEOUT_MS);
        FILE *f = fopen(second.log, "r");
        if (f) {
                size_t n = fread(log, 1, sizeof log - 1, f);
                log[n] = '\0';
                fclose(f);
        }
        h_cleanup(&second);
        cr_assert(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0, "second daemon did not fail");
        cr_assert(strstr(log, "already listening"), "unclear message: %s", log);
        ping_ok(D.sock); /* and the first one is untouched */
}

Test(lifecycle, replaces_a_stale_socket_file) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char dir[] = "/tmp/mcpvisor-stale-XXXXXX", path[200];

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/mcp.sock", dir);
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        close(fd); /* the node stays, nobody listens: stale */

        const char *args[] = { "--socket", path, NULL };
        h_start(&D, &(struct h_opts){ .extra_args = args });
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS), "did not start over a stale socket");
        ping_ok(path);
        cr_assert(exited_cleanly(h_stop(&D, SIGTERM, H_TIMEOUT_MS)));
        rmdir(dir);
}

Test(lifecycle, activated_unnamed_socket_is_the_mcp_socket) {
        struct stat st;

        h_start(&D, &(struct h_opts){ .activate = true });
        /* systemd-socket-activate starts the daemon on the first connection */
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS), "no READY=1 under activation");
        h_close(c);
        cr_assert(h_log_wait(&D, "socket passed by systemd", H_TIMEOUT_MS));
        cr_assert(exited_cleanly(h_stop(&D, SIGTERM, H_TIMEOUT_MS)));
        cr_assert_eq(stat(D.sock, &st), 0, "an activated socket must never be unlinked");
        cr_assert_eq(stat(D.control, &st), -1, "bound a control socket although activated");
}

Test(lifecycle, activated_sockets_picked_by_name) {
        /* control first on the command line, so picking by position would be wrong */
        h_start(&D, &(struct h_opts){ .activate = true, .activate_control = true, .fdnames = "mcp:control" });
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        h_close(c);
        ping_ok(D.control);
        /* MCP methods are not served on the control socket */
        c = h_connect(D.control, H_TIMEOUT_MS);
        json_object *r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}\n");
        cr_assert_neq(h_error_code(r), 0);
        json_object_put(r);
        h_close(c);
        cr_assert(exited_cleanly(h_stop(&D, SIGTERM, H_TIMEOUT_MS)));
}

Test(lifecycle, activated_names_swapped) {
        h_start(&D, &(struct h_opts){ .activate = true, .activate_control = true, .fdnames = "control:mcp" });
        /* the file called control.sock now carries the MCP role */
        struct h_conn *c = h_connect(D.control, H_TIMEOUT_MS);
        h_initialize(c);
        h_close(c);
        cr_assert(exited_cleanly(h_stop(&D, SIGTERM, H_TIMEOUT_MS)));
}

Test(lifecycle, activation_with_ambiguous_names_fails_clearly) {
        h_start(&D, &(struct h_opts){ .activate = true, .activate_control = true });
        /* the first connection starts the daemon, which must refuse and exit non-zero */
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        int status = h_wait_exit(&D, H_TIMEOUT_MS);
        h_close(c);
        cr_assert(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0);
        cr_assert(h_log_wait(&D, "FileDescriptorName=", 0));
        cr_assert(h_notify_wait(&D, "ERRNO=", 0), "no ERRNO= before the failing exit: %s", D.notices);
}

Test(lifecycle, watchdog_pings_at_half_the_interval) {
        h_start(&D, &(struct h_opts){ .watchdog_usec = 400000 });
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        long long t0 = h_now_ms();
        while (h_notify_count(&D, "WATCHDOG=1") < 3 && h_now_ms() - t0 < 3000)
                h_notify_wait(&D, "never", 50);
        unsigned pings = h_notify_count(&D, "WATCHDOG=1");
        cr_assert_geq(pings, 3, "only %u WATCHDOG=1 in 3 s with WATCHDOG_USEC=400000", pings);
}

Test(lifecycle, no_watchdog_without_watchdog_usec) {
        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        cr_assert_not(h_notify_wait(&D, "WATCHDOG=1", 600));
}

Test(lifecycle, sighup_keeps_serving) {
        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        kill(D.pid, SIGHUP);
        cr_assert(h_log_wait(&D, "SIGHUP", H_TIMEOUT_MS));
        ping_ok(D.sock);
}

static int run_cli(const char *const *args, char *out, size_t outlen) {
        return h_run_daemon(args, NULL, out, outlen);
}

Test(lifecycle, command_line) {
        char out[8192];

        cr_assert_eq(run_cli((const char *[]){ "--version", NULL }, out, sizeof out), 0);
        cr_assert(strstr(out, "mcpvisord 0."), "%s", out);
        cr_assert_eq(run_cli((const char *[]){ "--help", NULL }, out, sizeof out), 0);
        cr_assert(strstr(out, "--control-socket"), "%s", out);
        cr_assert_eq(run_cli((const char *[]){ "--bogus", NULL }, out, sizeof out), 2);
        cr_assert(strstr(out, "--bogus"), "%s", out);
        cr_assert_eq(run_cli((const char *[]){ "--log-level", "loud", NULL }, out, sizeof out), 2);
        cr_assert_eq(run_cli((const char *[]){ "--config", "/nonexistent/mcpvisor.json", NULL }, out, sizeof out), 1);
        cr_assert(strstr(out, "/nonexistent/mcpvisor.json"), "%s", out);
}

Test(lifecycle, check_config) {
        char out[8192], dir[] = "/tmp/mcpvisor-cfg-XXXXXX", path[200];
        FILE *f;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/c.json", dir);
        f = fopen(path, "w");
        fputs("{\"mcpvisor\":{\"socketMode\":\"rw\",\"maxMessageSize\":\"big\",\"colour\":1}}", f);
        fclose(f);
        cr_assert_eq(run_cli((const char *[]){ "--check-config", "--config", path, NULL }, out, sizeof out), 1);
        cr_assert(strstr(out, "mcpvisor.socketMode"), "%s", out);
        cr_assert(strstr(out, "mcpvisor.maxMessageSize"), "%s", out);
        cr_assert(strstr(out, "error: mcpvisor.colour: unknown key"), "%s", out);

        f = fopen(path, "w");
        fputs("{\"mcpServers\":{\"github\":{\"command\":\"npx\",\"args\":[\"-y\",5]},\"ok\":{\"command\":\"cat\"}}}", f);
        fclose(f);
        cr_assert_eq(run_cli((const char *[]){ "--check-config", "--config", path, NULL }, out, sizeof out), 1);
        cr_assert(strstr(out, "mcpServers.github.args[1]: expected a string"), "%s", out);

        f = fopen(path, "w");
        fputs("{\"mcpServers\":{\"ok\":{\"command\":\"cat\"}},\"mcpvisor\":{\"logLevel\":\"debug\"}}", f);
        fclose(f);
        cr_assert_eq(run_cli((const char *[]){ "--check-config", "--config", path, NULL }, out, sizeof out), 0, "%s", out);
        unlink(path);
        rmdir(dir);
}
