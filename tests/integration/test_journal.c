/* Native journal logging: when stderr is the journal ($JOURNAL_STREAM matches fd 2), the
 * daemon sends structured records instead of text lines. The test stands in for journald
 * (h_fake_journald). */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static struct h_daemon D;
static int journal_fd = -1;

static void fake_journald(void) {
        journal_fd = h_fake_journald();
}

static void stop(void) {
        h_log_dump_if_verbose(&D);
        h_teardown_expect(h_cleanup(&D), "the daemon did not stop with exit status 0");
}

/* Waits for a record containing every needle (each a "FIELD=value" line). */
static bool record_with(const char *const *needles, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;
        char buf[8192];

        while (h_now_ms() < deadline) {
                struct pollfd p = { journal_fd, POLLIN, 0 };
                if (poll(&p, 1, (int)(deadline - h_now_ms())) <= 0)
                        break;
                ssize_t n = recv(journal_fd, buf, sizeof buf - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                bool all = true;
                for (const char *const *s = needles; *s && all; s++)
                        all = strstr(buf, *s) != NULL;
                if (all)
                        return true;
        }
        return false;
}

Test(journal, structured_records_with_client_field, .init = fake_journald, .fini = stop, .timeout = 30) {
        h_start(&D, &(struct h_opts){ .journal_stream = true });
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        cr_assert(record_with((const char *[]){ "SYSLOG_IDENTIFIER=mcpvisord\n", "PRIORITY=6\n",
                                                "MESSAGE=mcpvisord ready\n", NULL }, H_TIMEOUT_MS),
                  "no native record for the ready message");
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        cr_assert(record_with((const char *[]){ "MCPVISOR_CLIENT=1\n", "MESSAGE=[client 1] MCP client connected (pid", NULL },
                              H_TIMEOUT_MS),
                  "no record carrying MCPVISOR_CLIENT=");
        h_close(c);
        /* and nothing went to stderr as text */
        cr_assert_not(h_log_wait(&D, "mcpvisord: info:", 0), "text lines on stderr although it is the journal");
}

Test(journal, text_when_journal_stream_does_not_match, .init = fake_journald, .fini = stop, .timeout = 30) {
        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "mcpvisord: info: mcpvisord ready", H_TIMEOUT_MS));
}

/* A server's stderr lines are records of its own: journalctl -t NAME and
 * journalctl MCPVISOR_SERVER=NAME both find them; "<3>" sets the priority. */
Test(journal, server_stderr_under_its_own_name, .init = fake_journald, .fini = stop, .timeout = 30) {
        char config[1024];

        snprintf(config, sizeof config, "{\"mcpServers\":{\"jtest\":{\"command\":\"%s\",\"args\":[\"--stderr\",\"hello journal\"]}}}",
                 h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(record_with((const char *[]){ "SYSLOG_IDENTIFIER=jtest\n", "MCPVISOR_SERVER=jtest\n",
                                                "MESSAGE=hello journal\n", "PRIORITY=6\n", NULL }, H_TIMEOUT_MS),
                  "no record of the server's stderr line under its name");
}

Test(journal, server_stderr_priority_prefix, .init = fake_journald, .fini = stop, .timeout = 30) {
        char config[512];

        snprintf(config, sizeof config, "{\"mcpServers\":{\"jwarn\":{\"command\":\"%s\",\"args\":[\"--stderr\",\"<3>it broke\"]}}}",
                 h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(record_with((const char *[]){ "SYSLOG_IDENTIFIER=jwarn\n", "MESSAGE=it broke\n", "PRIORITY=3\n", NULL },
                              H_TIMEOUT_MS),
                  "the <3> prefix did not become PRIORITY=3");
}

/* State changes carry the server's name too, so journalctl MCPVISOR_SERVER=NAME tells its story. */
Test(journal, state_changes_carry_the_server, .init = fake_journald, .fini = stop, .timeout = 30) {
        char config[512];

        snprintf(config, sizeof config, "{\"mcpServers\":{\"jstate\":{\"command\":\"%s\"}}}", h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(record_with((const char *[]){ "SYSLOG_IDENTIFIER=mcpvisord\n", "MCPVISOR_SERVER=jstate\n",
                                                "MESSAGE=[jstate] starting -> ready", NULL }, H_TIMEOUT_MS),
                  "no ready record with MCPVISOR_SERVER=");
}

/* An audit record is a record of its own fields, so that journalctl MCPVISOR_OUTCOME=denied
 * or MCPVISOR_UID=0 finds it; the default audit ("denied") records the denial. */
Test(journal, denial_audited_with_its_fields, .init = fake_journald, .fini = stop, .timeout = 30) {
        char config[1024], pid_field[64];
        struct h_conn *c;
        json_object *r;

        snprintf(config, sizeof config,
                 "{\"mcpvisor\":{\"access\":{\"rules\":[{\"tools\":[\"jaudit__add\"],\"action\":\"deny\"}]}},"
                 "\"mcpServers\":{\"jaudit\":{\"command\":\"%s\"}}}",
                 h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(h_notify_wait(&D, "1/1 servers ready", H_TIMEOUT_MS));
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                  "\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}\n"
                  "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
                  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"jaudit__add\",\"arguments\":{}}}\n");
        json_object_put(h_recv(c, H_TIMEOUT_MS));
        r = h_recv(c, H_TIMEOUT_MS);
        cr_assert(r && strstr(h_json_text(r), "permission denied"), "the call: %s", h_json_text(r));
        json_object_put(r);
        snprintf(pid_field, sizeof pid_field, "MCPVISOR_PEER_PID=%d\n", (int)getpid());
        cr_assert(record_with((const char *[]){ "MCPVISOR_OUTCOME=denied\n", "MCPVISOR_UID=0\n", pid_field,
                                                "MCPVISOR_TOOL=jaudit__add\n", "MCPVISOR_SERVER=jaudit\n",
                                                "MCPVISOR_DURATION_USEC=", "PRIORITY=5\n", NULL },
                              H_TIMEOUT_MS),
                  "no audit record with its fields");
        h_close(c);
}
