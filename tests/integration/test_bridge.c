/* mcpvisorctl connect, the stdio bridge every agent launches, against the built daemon run
 * for real: an MCP session through it, bytes unchanged, answers still owed at stdin's EOF,
 * the daemon going away. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
