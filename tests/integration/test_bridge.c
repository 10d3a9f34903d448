/* mcpvisorctl connect, the stdio bridge every agent launches, against the built daemon run
 * for real: an MCP session through it, bytes unchanged, answers still owed at stdin's EOF,
 * the daemon going away; real sizes both ways (requests and results of 1 KiB to 16 MiB, a
 * tools/list of a thousand tools); and a client that goes away mid-stream leaves no bridge
 * behind. The bridge's byte pump alone is tested in tests/unit/test_ctl_bridge.c. */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"
#include "servers.h"

static struct h_daemon D;

static void setup(void) {
        D.notify_fd = -1; /* a daemon never started must not have fd 0 closed by the teardown */
        servers_reset(&D);
        signal(SIGPIPE, SIG_IGN); /* mcpvisorctl may exit before it has read all we write to it */
}

static void teardown(void) {
        servers_teardown();
}

TestSuite(bridge, .init = setup, .fini = teardown, .timeout = 120);

static const char INITIALIZE[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
        "\"capabilities\":{},\"clientInfo\":{\"name\":\"bridge-test\",\"version\":\"1\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

static void start_demo(const char *settings, const char *args) {
        set_settings(settings);
        add_demo("demo", "", args);
        start(NULL);
        wait_all_ready(1);
}

static void connect_start(struct proc *p) {
        proc_start(p, &D, (const char *const[]){ "-s", D.sock, "connect", NULL }, NULL);
}

static json_object *proc_message(struct proc *p) {
        char *line = proc_line(p, H_TIMEOUT_MS);
        json_object *o;

        cr_assert_not_null(line, "no line from connect; stderr: %s", p->errbuf);
        o = json_tokener_parse(line);
        cr_assert_not_null(o, "connect printed something that is not JSON: %.300s", line);
        free(line);
        return o;
}

/* Starts connect and initializes a session through it. */
static void connect_initialized(struct proc *p) {
        connect_start(p);
        proc_write(p, INITIALIZE);
        json_object_put(proc_message(p));
}

/* ---- a session ---- */

Test(bridge, bridges_an_mcp_session) {
        struct proc p;
        json_object *m;

        start_demo("", "");
        connect_start(&p);
        proc_write(&p, INITIALIZE);
        m = proc_message(&p);
        cr_expect_eq(json_object_get_int(h_get(m, "id")), 1);
        cr_expect_str_eq(h_str(m, "result.protocolVersion"), "2025-11-25");
        json_object_put(m);

        proc_write(&p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
        m = proc_message(&p);
        cr_expect_eq(json_object_get_int(h_get(m, "id")), 2);
        cr_expect(h_has_item(h_tool_names(m), "demo__echo"), "tools: %s", h_tool_names(m));
        json_object_put(m);

        proc_write(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"three\",\"method\":\"tools/call\","
                       "\"params\":{\"name\":\"demo__echo\",\"arguments\":{\"text\":\"h\\u00e9llo \\/ world\"}}}\n");
        m = proc_message(&p);
        cr_expect_str_eq(h_str(m, "id"), "three");
        cr_expect_str_eq(h_result_text(m), "h\xc3\xa9llo / world");
        json_object_put(m);

        proc_close_stdin(&p);
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 0, "connect after stdin EOF: stderr %s", p.errbuf);
        cr_expect_eq(p.taken, p.outlen, "nothing more on stdout: %s", p.outbuf + p.taken);
        cr_expect_str_empty(p.errbuf);
        proc_free(&p);
}

Test(bridge, delivers_answers_still_pending_at_stdin_eof) {
        struct proc p;
        json_object *m;

        start_demo("", "");
        connect_start(&p);
        proc_write(&p, INITIALIZE);
        proc_write(&p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                       "\"params\":{\"name\":\"demo__sleep\",\"arguments\":{\"ms\":300}}}\n");
        proc_close_stdin(&p);
        json_object_put(proc_message(&p)); /* initialize's */
        m = proc_message(&p);
        cr_expect_eq(json_object_get_int(h_get(m, "id")), 2);
        cr_expect_str_eq(h_result_text(m), "slept 300 ms");
        json_object_put(m);
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 0, "stderr: %s", p.errbuf);
        cr_expect_str_empty(p.errbuf);
        proc_free(&p);
}

/* The same bytes through connect as straight on the socket, both ways. */
Test(bridge, passes_bytes_unchanged) {
        static const char call[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
                                   "{\"name\":\"demo__echo\",\"arguments\":{\"text\":\"caf\\u00e9 \\/ \\\"q\\\"\"}}}\n";
        struct h_conn *direct;
        char *via_socket, *via_connect;
        struct proc p;

        start_demo("", "");
        direct = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(direct, INITIALIZE);
        free(h_recv_line_draining(&D, direct, H_TIMEOUT_MS));
        h_send(direct, call);
        via_socket = h_recv_line_draining(&D, direct, H_TIMEOUT_MS);
        cr_assert_not_null(via_socket);
        h_close(direct);

        connect_start(&p);
        proc_write(&p, INITIALIZE);
        proc_write(&p, call);
        free(proc_line(&p, H_TIMEOUT_MS));
        via_connect = proc_line(&p, H_TIMEOUT_MS);
        cr_assert_not_null(via_connect, "no answer; stderr: %s", p.errbuf);
        cr_expect_str_eq(via_connect, via_socket);
        free(via_connect);
        /* not JSON: the daemon's error comes back, nothing of ours */
        proc_write(&p, "this is not json\n");
        proc_close_stdin(&p);
        via_connect = proc_line(&p, H_TIMEOUT_MS);
        cr_assert_not_null(via_connect, "no answer to the garbage; stderr: %s", p.errbuf);
        cr_expect(strstr(via_connect, "\"code\":-32700"), "not the daemon's parse error: %s", via_connect);
        free(via_connect);
        free(via_socket);
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 0);
        proc_free(&p);
}

Test(bridge, says_when_the_daemon_goes_away) {
        struct proc p;

        start_demo("", "");
        connect_initialized(&p);
        cr_assert_eq(h_stop_draining(&D, SIGTERM, H_TIMEOUT_MS), 0, "the daemon did not stop cleanly");
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 1);
        cr_expect_str_eq(p.errbuf, "mcpvisorctl: the daemon closed the connection\n");
        cr_expect_eq(p.taken, p.outlen, "nothing of ours on stdout: %s", p.outbuf + p.taken);
        proc_free(&p);
}

/* ---- real sizes ---- */

/* A tools/call of demo__echo whose text is len bytes: the request is that large, and so is
 * the result, which the server writes back. */
static char *echo_call(int id, size_t len) {
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
                                   "{\"name\":\"demo__echo\",\"arguments\":{\"text\":\"";
        char *text = malloc(len + 256);
        int n;

        cr_assert_not_null(text);
        n = snprintf(text, 256, head, id);
        for (size_t i = 0; i < len; i++)
                text[n + i] = "abcdefghijklmnopqrstuvwxyz0123456789 ,.-"[(i * 7 + i / 41) % 40];
        strcpy(text + n + len, "\"}}}\n");
        return text;
}

static char *answer_on_the_socket(const char *call) {
        struct h_conn *direct = h_connect(D.sock, H_TIMEOUT_MS);
        char *line;

        h_send(direct, INITIALIZE);
        free(h_recv_line_draining(&D, direct, H_TIMEOUT_MS));
        h_send(direct, call);
        line = h_recv_line_draining(&D, direct, H_TIMEOUT_MS);
        cr_assert_not_null(line, "no answer on the socket");
        h_close(direct);
        return line;
}

/* Requests and results of 1 KiB, 64 KiB, 1 MiB and 16 MiB through the bridge, each answer
 * byte for byte the one the socket gives, the echoed text whole. */
Test(bridge, carries_requests_and_results_of_any_size) {
        static const size_t sizes[] = { 1024, 65536, 1 << 20, 16 << 20 };
        struct proc p;

        start_demo("\"maxMessageSize\": 41943040", "");
        connect_initialized(&p);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                char *call = echo_call((int)i + 10, sizes[i]), *via_socket = answer_on_the_socket(call), *via_connect;
                json_object *m;

                proc_send(&p, call, strlen(call));
                via_connect = proc_line(&p, H_TIMEOUT_MS);
                cr_assert_not_null(via_connect, "no answer of %zu bytes; stderr: %s", sizes[i], p.errbuf);
                cr_expect_eq(strlen(via_connect), strlen(via_socket), "%zu bytes", sizes[i]);
                cr_expect(strcmp(via_connect, via_socket) == 0, "the %zu-byte answer differs from the socket's",
                          sizes[i]);
                m = json_tokener_parse(via_connect);
                cr_assert_not_null(m, "the %zu-byte answer is not JSON", sizes[i]);
                cr_expect_eq(strlen(h_result_text(m)), sizes[i]);
                json_object_put(m);
                free(via_connect);
                free(via_socket);
                free(call);
        }
        proc_close_stdin(&p);
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 0, "stderr: %s", p.errbuf);
        proc_free(&p);
}

/* Another client's ping and small call, answered while a large result is on its way. */
static void another_client_is_answered(struct h_conn *other, int round) {
        json_object *m;

        h_sendf(other, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", 100 + round);
        m = h_recv(other, H_TIMEOUT_MS);
        cr_expect_eq(json_object_get_int(h_get(m, "id")), 100 + round);
        json_object_put(m);
        h_sendf(other,
                "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__echo\","
                "\"arguments\":{\"text\":\"small %d\"}}}\n",
                200 + round, round);
        m = h_recv(other, H_TIMEOUT_MS);
        cr_expect_str_eq(h_result_text(m), round == 0 ? "small 0" : round == 1 ? "small 1" : "small 2");
        json_object_put(m);
}

static bool readable(int fd, int timeout_ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, timeout_ms) == 1;
}

/* A 64 MiB result arrives whole and byte for byte the same through the socket and through
 * the bridge. Each time, once its first bytes have come and while the rest waits in the
 * daemon (nobody reads it meanwhile), another client's calls are answered: one large
 * answer holds up no one else. */
Test(bridge, a_64_mib_result_whole_while_another_client_is_answered, .timeout = 240) {
        static const size_t size = 64u << 20;
        char *call = echo_call(7, size), *via_socket, *via_connect;
        struct h_conn *big, *other;
        json_object *m;
        struct proc p;

        start_demo("\"maxMessageSize\": 83886080, \"maxServerMessageSize\": 83886080, \"clientOutputLimit\": 201326592", "");
        other = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(other);

        big = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(big);
        h_send(big, call);
        cr_assert(readable(big->fd, 60000), "no part of the 64 MiB answer came");
        for (int round = 0; round < 3; round++) {
                another_client_is_answered(other, round);
                cr_assert(h_conn_fill_now(big)); /* a little of it, then the other client again */
        }
        via_socket = h_recv_line(big, 60000);
        cr_assert_not_null(via_socket, "the 64 MiB answer did not come whole on the socket");
        h_close(big);
        m = json_tokener_parse(via_socket);
        cr_assert_not_null(m, "the 64 MiB answer is not JSON");
        cr_expect_eq(strlen(h_result_text(m)), size);
        cr_expect(memcmp(h_result_text(m), strstr(call, "\"text\":\"") + 8, size) == 0, "the text came back changed");
        json_object_put(m);

        connect_initialized(&p);
        proc_send(&p, call, strlen(call));
        cr_assert(proc_wait_output(&p, p.outlen + 1, 60000), "no part of the 64 MiB answer came through the bridge");
        for (int round = 0; round < 3; round++)
                another_client_is_answered(other, round);
        via_connect = proc_line(&p, 60000);
        cr_assert_not_null(via_connect, "the 64 MiB answer did not come whole through the bridge; stderr: %s", p.errbuf);
        cr_expect_eq(strlen(via_connect), strlen(via_socket));
        cr_expect(strcmp(via_connect, via_socket) == 0, "the bridge's answer differs from the socket's");
        proc_close_stdin(&p);
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 0, "stderr: %s", p.errbuf);
        proc_free(&p);
        h_close(other);
        free(via_connect);
        free(via_socket);
        free(call);
}

/* A thousand tools in one page: a line of about 150 kB, more than the 64 KiB that once
 * stopped the bridge for good. */
Test(bridge, lists_a_thousand_tools) {
        struct proc p;
        json_object *m, *tools;

        start_demo("\"listPageSize\": 0", "\"--tools\",\"1000\"");
        connect_initialized(&p);
        proc_write(&p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
        m = proc_message(&p);
        tools = h_get(m, "result.tools");
        cr_assert_not_null(tools, "no tools: %.300s", h_json_text(m));
        cr_expect_geq(json_object_array_length(tools), 1000);
        cr_expect(h_has_item(h_tool_names(m), "demo__tool_1000"), "the last synthetic tool is missing");
        json_object_put(m);
        /* and the bridge still works after it */
        proc_write(&p, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n");
        m = proc_message(&p);
        cr_expect_eq(json_object_get_int(h_get(m, "id")), 3);
        json_object_put(m);
        proc_close_stdin(&p);
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 0, "stderr: %s", p.errbuf);
        proc_free(&p);
}

/* ---- a client that goes away ---- */

/* The client gives up while nothing flows: it stops reading (closes its end of our
 * stdout) but keeps our stdin open. The bridge must notice on its own and exit. */
Test(bridge, exits_when_its_client_stops_reading) {
        struct proc p;
        long long t0;

        start_demo("", "");
        connect_initialized(&p);
        t0 = h_now_ms();
        close(p.out);
        p.out = -1;
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 1);
        cr_expect_lt(h_now_ms() - t0, 2000, "the bridge took %lld ms to go", h_now_ms() - t0);
        proc_free(&p);
}

/* The client dies while a 16 MiB result is coming: all its ends close at once. No bridge
 * process is left, and the daemon serves the next client. */
Test(bridge, a_client_that_dies_mid_stream_leaves_no_bridge) {
        char *call = echo_call(2, 16 << 20);
        struct proc p;
        json_object *m;
        char *line;

        start_demo("\"maxMessageSize\": 41943040", "");
        connect_initialized(&p);
        proc_send(&p, call, strlen(call));
        /* our pipe holds 64 KiB: the bridge cannot have written all of it yet */
        cr_assert(proc_wait_output(&p, p.outlen + 100000, H_TIMEOUT_MS), "no part of the answer came; stderr: %s",
                  p.errbuf);
        close(p.out);
        p.out = -1;
        proc_close_stdin(&p);
        cr_expect_eq(proc_wait(&p, H_TIMEOUT_MS), 1);
        cr_expect(h_pid_gone_wait(p.pid, H_TIMEOUT_MS), "the bridge %d is still there", (int)p.pid);
        proc_free(&p);
        free(call);

        line = answer_on_the_socket("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n");
        m = json_tokener_parse(line);
        cr_expect_eq(json_object_get_int(h_get(m, "id")), 3);
        json_object_put(m);
        free(line);
}
