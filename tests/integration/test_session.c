/* The MCP session layer over the daemon's own socket: handshake, ids, and every bad input. */
#include <criterion/criterion.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"

static struct h_daemon D;

static void start_default(void) {
        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS), "no READY=1");
}

static void start_small_limits(void) {
        h_start(&D, &(struct h_opts){
                .config = "{\"mcpvisor\":{\"maxMessageSize\":2048,\"clientOutputLimit\":65536}}",
        });
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS), "no READY=1");
}

static void stop(void) {
        h_log_dump_if_verbose(&D);
        h_teardown_expect(h_cleanup(&D), "the daemon did not stop with exit status 0");
}

#define Sess(name, ...) Test(session, name, .init = start_default, .fini = stop, .timeout = 30, ##__VA_ARGS__)

static void expect_error(json_object *r, int code, const char *id_json) {
        cr_assert_eq(h_error_code(r), code, "expected error %d, got %s", code, json_object_to_json_string(r));
        cr_assert_str_eq(json_object_to_json_string_ext(h_get(r, "id"), JSON_C_TO_STRING_PLAIN), id_json);
        cr_assert_str_eq(h_str(r, "jsonrpc"), "2.0");
        json_object_put(r);
}

Sess(negotiates_every_supported_version) {
        static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

        for (size_t i = 0; i < 4; i++) {
                struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
                h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n", versions[i]);
                json_object *r = h_recv(c, H_TIMEOUT_MS);
                cr_assert_str_eq(h_str(r, "result.protocolVersion"), versions[i]);
                cr_assert_str_eq(h_str(r, "result.serverInfo.name"), "mcpvisor");
                cr_assert(json_object_is_type(h_get(r, "result.capabilities"), json_type_object));
                json_object_put(r);
                h_close(c);
        }
}

Sess(unknown_version_gets_latest) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        json_object *r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2099-01-01\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n");
        cr_assert_str_eq(h_str(r, "result.protocolVersion"), "2025-11-25");
        json_object_put(r);
        h_close(c);
}

Sess(ids_echoed_with_exact_type_and_value) {
        static const char *const ids[] = { "0", "7", "-3", "9007199254740993", "\"1\"", "\"abc\"",
                                           "\"\"", "\"\\u00e9t\\u00e9\"" };
        static const char *const echoed[] = { "0", "7", "-3", "9007199254740993", "\"1\"", "\"abc\"",
                                              "\"\"", "\"été\"" };
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);

        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
                h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}\n", ids[i]);
                json_object *r = h_recv(c, H_TIMEOUT_MS);
                cr_assert_str_eq(json_object_to_json_string_ext(h_get(r, "id"), JSON_C_TO_STRING_PLAIN), echoed[i]);
                cr_assert(json_object_is_type(h_get(r, "result"), json_type_object));
                json_object_put(r);
        }
        h_close(c);
}

Sess(requests_before_initialize_are_refused_but_ping_works) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        json_object *r;

        h_expect_result(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
        cr_assert(strstr(h_str(r, "error.message"), "initialize"), "message: %s", h_str(r, "error.message"));
        expect_error(r, -32600, "2");
        h_initialize(c);
        /* after the handshake the same request is no longer refused for being early */
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}\n");
        cr_assert_neq(h_error_code(r), -32600, "still refused after initialize");
        json_object_put(r);
        h_close(c);
}

Sess(server_discover_probe_then_initialize_on_same_connection) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        long long t0 = h_now_ms();
        json_object *r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":\"server-discover-probe-1\",\"method\":\"server/discover\",\"params\":{}}\n");
        cr_assert_lt(h_now_ms() - t0, 2000, "the probe must be answered promptly");
        /* answered (the daemon speaks both eras), and a probe without _meta opens no era */
        cr_assert(json_object_is_type(h_get(r, "result.supportedVersions"), json_type_array), "%s", h_json_text(r));
        cr_assert_str_eq(h_str(r, "id") ?: "?", "server-discover-probe-1");
        json_object_put(r);
        h_initialize(c);
        h_expect_result(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n");
        h_close(c);
}

Sess(second_initialize_is_an_error) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"),
                     -32600, "5");
        h_close(c);
}

Sess(invalid_json_then_next_line_works) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        expect_error(h_call(c, "{not json\n"), -32700, "null");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing\n"), -32700, "null");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"\n"), -32700, "null");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\xfe\"}\n"), -32700, "null");
        h_expect_result(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
        h_close(c);
}

Sess(valid_json_that_is_not_jsonrpc) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        json_object *r;
        expect_error(h_call(c, "{\"foo\":1}\n"), -32600, "null");
        expect_error(h_call(c, "42\n"), -32600, "null");
        expect_error(h_call(c, "\"ping\"\n"), -32600, "null");
        expect_error(h_call(c, "null\n"), -32600, "null");
        expect_error(h_call(c, "{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"ping\"}\n"), -32600, "4");
        expect_error(h_call(c, "{\"id\":5,\"method\":\"ping\"}\n"), -32600, "5");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":7}\n"), -32600, "6");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n"), -32600, "null");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n"), -32600, "null");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}\n"), -32600, "null");
        /* a broken response: its id is of the daemon's numbering, never answered under it */
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{},\"error\":{}}\n"), -32600, "null");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":9}\n"), -32600, "null");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"ping\"}\n"), -32600,
                     "null");
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551614,\"method\":\"ping\"}\n");
        cr_assert_str_eq(json_object_to_json_string_ext(h_get(r, "id"), JSON_C_TO_STRING_PLAIN), "18446744073709551614");
        json_object_put(r);
        h_close(c);
}

Sess(batches_are_refused_clearly) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        json_object *r = h_call(c, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n");
        cr_assert(strstr(h_str(r, "error.message"), "batch"), "message: %s", h_str(r, "error.message"));
        expect_error(r, -32600, "null");
        expect_error(h_call(c, "[]\n"), -32600, "null");
        h_close(c);
}

Sess(unknown_method_and_bad_params) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        json_object *r;
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"capabilities\":{}}}\n"), -32602, "2");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\"}\n"), -32602, "3");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{\"protocolVersion\":5}}\n"), -32602, "4");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":5}\n"), -32602, "5");
        expect_error(h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":[1]}\n"), -32602, "6");
        /* none of that initialized the session */
        h_initialize(c);
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no/such\"}\n");
        cr_assert(strstr(h_str(r, "error.message"), "no/such"));
        expect_error(r, -32601, "1");
        h_close(c);
}

Sess(notifications_get_no_answer) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\"}\n");
        h_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":99}}\n");
        h_send(c, "{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}\n"); /* a stray response */
        json_object *r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        cr_assert_str_eq(json_object_to_json_string(h_get(r, "id")), "1", "the notifications were answered");
        json_object_put(r);
        h_close(c);
}

Sess(crlf_and_blank_lines_accepted) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_expect_result(c, "\r\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n");
        h_close(c);
}

Sess(message_split_across_writes) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(c, "{\"jsonrpc\":\"2.0\",");
        cr_assert_null(h_recv_line(c, 100), "answered half a message");
        h_send(c, "\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"meth");
        json_object *r = h_recv(c, H_TIMEOUT_MS);
        cr_assert_eq(json_object_get_int(h_get(r, "id")), 1);
        json_object_put(r);
        h_send(c, "od\":\"ping\"}\n");
        r = h_recv(c, H_TIMEOUT_MS);
        cr_assert_eq(json_object_get_int(h_get(r, "id")), 2);
        json_object_put(r);
        h_close(c);
}

Test(session, oversized_line_answered_and_connection_kept, .init = start_small_limits, .fini = stop, .timeout = 30) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        char big[5000];

        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        /* complete in one write */
        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"pad\":\"%s\"}}\n", big);
        json_object *r = h_recv(c, H_TIMEOUT_MS);
        cr_assert(strstr(h_str(r, "error.message"), "2048"), "message: %s", h_str(r, "error.message"));
        expect_error(r, -32600, "null");
        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
        cr_assert_eq(json_object_get_int(h_get(r, "id")), 2);
        json_object_put(r);

        /* in pieces: answered once as soon as the limit passes, the rest discarded */
        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"pad\":\"%s", big);
        expect_error(h_recv(c, H_TIMEOUT_MS), -32600, "null");
        h_send(c, big);
        h_send(c, big);
        h_send(c, "\"}}\n{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\n");
        r = h_recv(c, H_TIMEOUT_MS);
        cr_assert_eq(json_object_get_int(h_get(r, "id")), 4, "got %s", json_object_to_json_string(r));
        json_object_put(r);
        h_close(c);
}

Sess(half_close_answers_pending_then_closes) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
        shutdown(c->fd, SHUT_WR);
        json_object *r = h_recv(c, H_TIMEOUT_MS);
        cr_assert_eq(json_object_get_int(h_get(r, "id")), 1);
        json_object_put(r);
        /* the unterminated last line is still a message */
        r = h_recv(c, H_TIMEOUT_MS);
        cr_assert_eq(json_object_get_int(h_get(r, "id")), 2);
        json_object_put(r);
        cr_assert(h_wait_eof(c, H_TIMEOUT_MS, NULL), "connection not closed after half-close");
        h_close(c);
}

Sess(bad_client_costs_another_nothing) {
        struct h_conn *good = h_connect(D.sock, H_TIMEOUT_MS), *bad = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(good);
        h_send(bad, "\x01\x02garbage\n[1,2,3]\n{\"jsonrpc\":\n");
        close(bad->fd); /* and vanish without reading the errors */
        bad->fd = -1;
        for (int i = 0; i < 20; i++) {
                h_expect_result(good, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n");
        }
        h_close(bad);
        h_close(good);
}

Sess(peer_credentials_logged) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        struct passwd *pw = getpwuid(getuid());
        char expect[256], comm[16] = "";

        /* The principal: who connected, with the command and user names it was resolved to. */
        cr_assert_eq(prctl(PR_GET_NAME, comm), 0);
        snprintf(expect, sizeof expect, "connected (pid %d, command %s, uid %u%s%s%s, gid %u)", (int)getpid(), comm,
                 (unsigned)getuid(), pw ? " (" : "", pw ? pw->pw_name : "", pw ? ")" : "", (unsigned)getgid());
        cr_assert(h_log_wait(&D, expect, H_TIMEOUT_MS), "no log line with '%s'", expect);
        h_close(c);
}

Test(session, client_that_stops_reading_is_dropped_alone, .init = start_small_limits, .fini = stop, .timeout = 60) {
        struct h_conn *slow = h_connect(D.sock, H_TIMEOUT_MS), *other = h_connect(D.sock, H_TIMEOUT_MS);
        char id[200];
        size_t lines = 0;
        int sent = 0;

        memset(id, 'i', sizeof id - 1);
        id[sizeof id - 1] = '\0';
        /* ~250 bytes per answer; 20,000 answers are far beyond the socket buffers plus the
         * 64 KiB limit. Writes block while the daemon catches up (bounded by SO_SNDTIMEO)
         * and fail once it has dropped us. */
        struct timeval tmo = { 2, 0 };
        setsockopt(slow->fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof tmo);
        for (sent = 0; sent < 20000; sent++) {
                char line[400];
                int n = snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":\"%s%d\",\"method\":\"ping\"}\n", id, sent);
                if (send(slow->fd, line, (size_t)n, MSG_NOSIGNAL) != n)
                        break;
                if (sent % 1000 == 999) {
                        json_object *r = h_call(other, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
                        cr_assert_not_null(h_get(r, "result"), "the other client was held up");
                        json_object_put(r);
                }
        }
        cr_assert(h_log_wait(&D, "not reading", H_TIMEOUT_MS), "the slow client was not dropped");
        cr_assert(h_wait_eof(slow, H_TIMEOUT_MS, &lines), "the slow client's connection stayed open");
        cr_assert_lt(lines, (size_t)sent, "every answer was delivered, so nothing was dropped");
        h_expect_result(other, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
        h_close(slow);
        h_close(other);
}

Sess(unknown_fields_do_not_break_requests) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        json_object *r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"x-extra\":true,\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"extensions\":{\"io.example/x\":{}}},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\",\"icons\":[]},\"_meta\":{\"a\":1}}}\n");
        cr_assert_str_eq(h_str(r, "result.protocolVersion"), "2025-11-25");
        json_object_put(r);
        h_close(c);
}

/* A clientInfo.name with a newline used to write a line of its own to the daemon's stderr,
 * one that looked like the daemon's (a server failing); its control characters are
 * left out now (session.h), so every record is one line. */
Sess(client_info_cannot_forge_log_lines) {
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        json_object *r;
        char *log, *line;

        r = h_call(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                      "\"capabilities\":{},\"clientInfo\":{\"name\":\"evil\\nmcpvisord: err: [good] ready -> failed: forged\","
                      "\"version\":\"1\\r\\nmcpvisord: crit: \\u001b[2Jforged too\"}}}\n");
        cr_assert_not_null(h_get(r, "result"), "%s", json_object_to_json_string(r));
        json_object_put(r);
        cr_assert(h_log_wait(&D, "initialized by evilmcpvisord: err: [good] ready -> failed: forged "
                                 "1mcpvisord: crit: [2Jforged too (protocol",
                             H_TIMEOUT_MS),
                  "no escaped line in:\n%s", h_log_text(&D));
        log = h_log_text(&D);
        for (line = log; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                cr_assert_neq(strncmp(line, "mcpvisord: err: [good]", 22), 0, "a forged line:\n%s", log);
                cr_assert_neq(strncmp(line, "mcpvisord: crit:", 16), 0, "a forged line:\n%s", log);
                cr_assert_null(memchr(line, '\x1b', strcspn(line, "\n")), "an escape sequence:\n%s", log);
        }
        free(log);
        h_close(c);
}
