/* Who is connected, run for real with clients of other users: the test runs as root and
 * connects as uid 4242 through a forked child (h_connect_as), so the daemon sees another
 * uid, its groups, pid and command on the socket. maxClientsPerUser turns away a user's
 * connection past the limit with one error line, and only that user's. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"
#include "servers.h"

#define AS_UID 4242
#define AS_GID 4242
#define AS_COMM "agent-4242"
#define CTL_MS 20000

static struct h_daemon D;
static const gid_t AS_GROUPS[] = { 4243, 4244 };

static void setup(void) {
        D.notify_fd = -1;
        servers_reset(&D);
        signal(SIGPIPE, SIG_IGN);
}

static void teardown(void) {
        servers_teardown();
}

TestSuite(who, .init = setup, .fini = teardown, .timeout = 60);

static char *ctl_clients(const char *json);

static struct h_conn *connect_as_user(void) {
        return h_connect_as(D.sock, AS_UID, AS_GID, AS_GROUPS, 2, AS_COMM);
}

/* Starts the daemon with settings (JSON members), its MCP socket open to every user. */
static void start_daemon_with(const char *settings) {
        set_settings(sf("\"socketMode\":\"0666\"%s%s", settings[0] ? "," : "", settings));
        start(NULL);
        h_close(h_connect(D.control, H_TIMEOUT_MS));
}

/* The first message on a fresh connection after a ping: the ping's answer when the daemon
 * took the connection, or the error line it sends to one it turns away. */
static json_object *first_answer(struct h_conn *c) {
        static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";

        /* Not h_send: a connection turned away may be closed already (EPIPE); its line is
         * still there to read. */
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        char *line = NULL;
        json_object *m;

        (void)!send(c->fd, ping, sizeof ping - 1, MSG_NOSIGNAL);
        /* The daemon stands still once its NOTIFY queue is full: drain it while waiting. */
        while (!line && h_now_ms() < deadline) {
                h_notify_drain(&D);
                line = h_recv_line(c, 20);
        }
        cr_assert_not_null(line, "no answer within %d ms", H_TIMEOUT_MS);
        m = json_tokener_parse(line);
        cr_assert_not_null(m, "not JSON: %s", line);
        free(line);
        return m;
}

static void expect_accepted(struct h_conn *c) {
        json_object *m = first_answer(c);

        cr_assert_eq(h_error_code(m), 0, "refused: %s", json_object_to_json_string(m));
        json_object_put(m);
}

static bool refused_for_limit(json_object *m) {
        const char *message = h_str(m, "error.message");

        return h_error_code(m) != 0 && message && strstr(message, "maxClientsPerUser 3");
}

static void expect_turned_away(struct h_conn *c) {
        json_object *m = first_answer(c);

        cr_assert(refused_for_limit(m), "not refused for the limit: %s", json_object_to_json_string(m));
        cr_assert_str_eq(h_str(m, "error.message"),
                         "too many connections for uid 4242 (maxClientsPerUser 3); close one before connecting again");
        cr_assert_eq(h_error_code(m), -32603);
        cr_assert(json_object_is_type(h_get(m, "id"), json_type_null), "%s", json_object_to_json_string(m));
        cr_assert_eq(json_object_get_int(h_get(m, "error.data.maxClientsPerUser")), 3);
        cr_assert(h_wait_eof(c, H_TIMEOUT_MS, NULL), "the connection past the limit stayed open");
        json_object_put(m);
}

/* The 4th connection of uid 4242 is turned away and closed, root's three (a count of its
 * own) are still taken, and once one of 4242's closes the next is taken again. Logged once
 * per run of refusals. */
Test(who, max_clients_per_user) {
        struct h_conn *mine[3], *root[3], *again;
        bool taken = false;

        start_daemon_with("\"maxClientsPerUser\":3");
        for (int i = 0; i < 3; i++) {
                mine[i] = connect_as_user();
                cr_assert_not_null(mine[i]);
                expect_accepted(mine[i]);
        }
        for (int i = 0; i < 2; i++) {
                struct h_conn *over = connect_as_user();

                cr_assert_not_null(over);
                expect_turned_away(over);
                h_close(over);
        }
        for (int i = 0; i < 3; i++) {
                root[i] = h_connect(D.sock, H_TIMEOUT_MS);
                expect_accepted(root[i]);
        }
        cr_assert_eq(h_log_count(&D, "uid 4242 has 3 MCP connections (maxClientsPerUser)"), 1);
        /* Root holds its 3: control connections are not counted, mcpvisorctl still answers. */
        free(ctl_clients(NULL));

        /* The daemon learns of the close on its loop: retry until it has. */
        h_close(mine[0]);
        for (long long deadline = h_now_ms() + H_TIMEOUT_MS; !taken && h_now_ms() < deadline;) {
                json_object *m;

                again = connect_as_user();
                m = first_answer(again);
                taken = h_error_code(m) == 0;
                cr_assert(taken || refused_for_limit(m), "%s", json_object_to_json_string(m));
                json_object_put(m);
                if (!taken)
                        h_close(again);
        }
        cr_assert(taken, "no connection of uid 4242 taken after one closed");
        h_close(again);
        for (int i = 1; i < 3; i++)
                h_close(mine[i]);
        for (int i = 0; i < 3; i++)
                h_close(root[i]);
}

/* 0 is no limit. */
Test(who, max_clients_per_user_zero_is_no_limit) {
        struct h_conn *mine[8];

        start_daemon_with("\"maxClientsPerUser\":0");
        for (int i = 0; i < 8; i++) {
                mine[i] = connect_as_user();
                cr_assert_not_null(mine[i]);
                expect_accepted(mine[i]);
        }
        for (int i = 0; i < 8; i++)
                h_close(mine[i]);
}

/* ---- mcpvisorctl clients ---- */

/* mcpvisorctl clients [json] against D: its stdout, malloc'd; it must exit 0. */
static char *ctl_clients(const char *json) {
        struct proc p;
        char *out;
        int status;

        proc_start(&p, &D, (const char *const[]){ "-C", D.control, "clients", json, NULL }, NULL);
        proc_close_stdin(&p);
        status = proc_wait(&p, CTL_MS);
        cr_assert_eq(status, 0, "mcpvisorctl clients exited %d: %s", status, p.errbuf);
        out = strdup(p.outbuf);
        proc_free(&p);
        return out;
}

static json_object *row_of_pid(json_object *rows, pid_t pid) {
        for (size_t i = 0; i < json_object_array_length(rows); i++) {
                json_object *row = json_object_array_get_idx(rows, i);

                if (json_object_get_int(h_get(row, "pid")) == pid)
                        return row;
        }
        cr_assert_fail("no client of pid %d in %s", (int)pid, json_object_to_json_string(rows));
        return NULL;
}

/* Each MCP client with the identity the kernel gave its socket: uid 4242 and its groups,
 * the pid and command of the process that connected (not of the test that holds the
 * descriptor now); root's with its user name. The control connection is not listed. */
Test(who, ctl_clients_lists_each_principal) {
        struct h_conn *mine = NULL, *root;
        json_object *answer, *rows, *row;
        char *table, *json;
        char pid_cell[32];

        start_daemon_with("");
        mine = connect_as_user();
        expect_accepted(mine);
        root = h_connect(D.sock, H_TIMEOUT_MS);
        expect_accepted(root);

        json = ctl_clients("--json");
        answer = json_tokener_parse(json);
        cr_assert_not_null(answer, "not JSON: %s", json);
        rows = h_get(answer, "clients");
        cr_assert_eq(json_object_array_length(rows), 2, "%s", json);
        row = row_of_pid(rows, mine->as_pid);
        cr_assert_eq(json_object_get_int(h_get(row, "uid")), AS_UID);
        cr_assert_eq(json_object_get_int(h_get(row, "gid")), AS_GID);
        cr_assert_str_eq(json_object_to_json_string_ext(h_get(row, "groups"), JSON_C_TO_STRING_PLAIN), "[4243,4244]");
        cr_assert_str_eq(h_str(row, "command"), AS_COMM);
        cr_assert(json_object_is_type(h_get(row, "user"), json_type_null), "%s", json); /* 4242 has no name */
        cr_assert_null(h_get(row, "profile"));
        cr_assert_eq(json_object_get_int(h_get(row, "inFlight")), 0);
        cr_assert_eq(json_object_get_int(h_get(row, "calls")), 0);
        cr_assert_geq(json_object_get_int64(h_get(row, "connectedAt")), (int64_t)time(NULL) - 60);
        row = row_of_pid(rows, getpid());
        cr_assert_eq(json_object_get_int(h_get(row, "uid")), 0);
        cr_assert_str_eq(h_str(row, "user"), "root");
        json_object_put(answer);
        free(json);

        table = ctl_clients(NULL);
        cr_assert_not_null(strstr(table, "ID  USER"), "%s", table);
        snprintf(pid_cell, sizeof pid_cell, " %d ", (int)mine->as_pid);
        cr_assert_not_null(strstr(table, pid_cell), "no pid %d in:\n%s", (int)mine->as_pid, table);
        cr_assert_not_null(strstr(table, "4242 "), "%s", table);
        cr_assert_not_null(strstr(table, AS_COMM), "%s", table);
        cr_assert_not_null(strstr(table, "root (0)"), "%s", table);
        free(table);
        h_close(mine);
        h_close(root);
}

/* A command name is the peer's to choose, any byte but NUL: a newline in it cannot forge a
 * line of the daemon's log, nor reach the operator's terminal from mcpvisorctl clients. */
Test(who, command_name_escaped) {
        struct h_conn *c;
        char *table, *json;
        json_object *answer;

        start_daemon_with("");
        c = h_connect_as(D.sock, AS_UID, AS_GID, AS_GROUPS, 2, "a\nmcpvisord: x");
        expect_accepted(c);
        cr_assert(h_log_wait(&D, "command a\\nmcpvisord: x, uid 4242", H_TIMEOUT_MS), "%s", h_log_text(&D));
        cr_assert_eq(h_log_count(&D, "\nmcpvisord: x"), 0);
        table = ctl_clients(NULL);
        cr_assert_not_null(strstr(table, "a\\x0amcpvisord: x"), "%s", table);
        json = ctl_clients("--json");
        answer = json_tokener_parse(json);
        cr_assert_str_eq(h_str(json_object_array_get_idx(h_get(answer, "clients"), 0), "command"), "a\nmcpvisord: x");
        json_object_put(answer);
        free(json);
        free(table);
        h_close(c);
}

/* CALLS counts what the client sent to servers, IN-FLIGHT what is not answered yet. */
Test(who, ctl_clients_counts_calls) {
        struct h_client *x = start_one_demo("demo", NULL);
        json_object *answer, *row;
        char *json;

        for (int i = 0; i < 2; i++)
                json_object_put(h_client_tool_call(x, sf("%d", i), "demo__echo", "{\"text\":\"hi\"}"));
        h_client_tool_request(x, "10", "demo__sleep", "{\"ms\":30000}");
        /* Answered after the call before it was taken, on the same connection. */
        json_object_put(h_client_call(x, "11", "ping", NULL));
        json = ctl_clients("--json");
        answer = json_tokener_parse(json);
        row = row_of_pid(h_get(answer, "clients"), getpid());
        cr_assert_eq(json_object_get_int(h_get(row, "calls")), 3, "%s", json);
        cr_assert_eq(json_object_get_int(h_get(row, "inFlight")), 1, "%s", json);
        json_object_put(answer);
        free(json);
        h_client_close(x);
}
