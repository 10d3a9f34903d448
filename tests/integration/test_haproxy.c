/* Past one host: two daemons behind HAProxy (Debian's haproxy 2.6), as docs/operations.md
 * ("Past one host") sets them up. Each daemon has its own HTTP front door on loopback, the
 * same servers and the same bearer token; HAProxy balances requests without Mcp-Session-Id
 * round-robin and keeps a legacy session on the daemon whose answer set its id (a
 * stick-table filled from the response header).
 *
 * The demo server of each daemon is started with MCPVISOR_IT_DAEMON=a or =b, and its tool
 * "env" answers that value: the test sees which daemon served each call.
 *
 * haproxy is installed by scripts/install-deps (test set). Missing, the test skips and says
 * so, except under CI (CI set), where the install step should have put it there: it fails. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "http-client.h"
#include "servers.h"

extern char **environ;

#define HAPROXY "/usr/sbin/haproxy"
#define TOKEN "it-token-0123456789abcdef0123456789"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
             "\"io.modelcontextprotocol/clientCapabilities\":{},"                    \
             "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"haproxy-it\",\"version\":\"2.0\"}}"
#define MODERN_HEADERS(method) "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " method "\r\n"
#define CALLS 12 /* modern calls: six for each daemon */

static struct h_daemon daemons[2];
static unsigned ports[2], front; /* the daemons' HTTP front doors; HAProxy's */
static char creds[64];           /* the token's credential, the HAProxy config */
static pid_t haproxy;

static void setup(void) {
        daemons[0].notify_fd = daemons[1].notify_fd = -1;
        strcpy(creds, "/tmp/mcpvisor-haproxy-XXXXXX");
        cr_assert_not_null(mkdtemp(creds));
}

static void teardown(void) {
        if (haproxy > 0) {
                kill(haproxy, SIGTERM);
                waitpid(haproxy, NULL, 0);
                haproxy = 0;
                if (getenv("H_VERBOSE")) /* as the harness shows the daemons' logs */
                        system(sf("cat %s/haproxy.log >&2", creds));
        }
        for (int i = 0; i < 2; i++)
                if (daemons[i].pid > 0) {
                        servers_reset(&daemons[i]);
                        servers_teardown();
                }
        h_remove_tree(creds);
}

TestSuite(haproxy, .init = setup, .fini = teardown, .timeout = 60);

/* The HAProxy configuration of docs/operations.md, in front of ports[0] and ports[1]. */
static const char *haproxy_config(void) {
        return sf("global\n"
                  "    maxconn 256\n"
                  "defaults\n"
                  "    mode http\n"
                  "    timeout connect 5s\n"
                  "    timeout client 1h\n"
                  "    timeout server 1h\n"
                  "frontend mcp\n"
                  "    bind 127.0.0.1:%u\n"
                  "    default_backend mcpvisord\n"
                  "backend mcpvisord\n"
                  "    balance roundrobin\n"
                  "    stick-table type string len 128 size 100k expire 2h\n"
                  "    stick on req.hdr(Mcp-Session-Id)\n"
                  "    stick store-response res.hdr(Mcp-Session-Id)\n"
                  "    server a 127.0.0.1:%u\n"
                  "    server b 127.0.0.1:%u\n",
                  front, ports[0], ports[1]);
}

static void start_haproxy(void) {
        const char *path = sf("%s/haproxy.cfg", creds);
        char *argv[] = { HAPROXY, "-db", "-f", (char *)path, NULL };
        posix_spawn_file_actions_t fa;
        FILE *f;
        int rc;

        cr_assert_not_null(f = fopen(path, "we"));
        fputs(haproxy_config(), f);
        cr_assert_eq(fclose(f), 0);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, sf("%s/haproxy.log", creds), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        rc = posix_spawn(&haproxy, HAPROXY, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        cr_assert_eq(rc, 0, "cannot run %s: %s", HAPROXY, strerror(rc));
        cr_assert(ht_wait_listening(front, H_TIMEOUT_MS), "haproxy is not listening on %u", front);
}

/* Both daemons, the same config but for their port and the demo server's MCPVISOR_IT_DAEMON,
 * the same token; then HAProxy in front. */
static void start_all(void) {
        const char *env[] = { sf("CREDENTIALS_DIRECTORY=%s", creds), NULL };
        FILE *f;

        if (access(HAPROXY, X_OK) != 0) {
                cr_assert_null(getenv("CI"), "%s is missing: scripts/install-deps test should have installed it", HAPROXY);
                cr_skip_test("%s is not installed (Debian's haproxy: scripts/install-deps test): two daemons behind "
                             "HAProxy NOT tested",
                             HAPROXY);
        }
        cr_assert_not_null(f = fopen(sf("%s/http-token", creds), "we"));
        fputs(TOKEN "\n", f);
        cr_assert_eq(fclose(f), 0);
        env[0] = strdup(env[0]);
        front = ht_free_port();
        for (int i = 0; i < 2; i++) {
                ports[i] = ht_free_port();
                servers_reset(&daemons[i]);
                add_demo("demo", sf("\"env\":{\"MCPVISOR_IT_DAEMON\":\"%c\"}", 'a' + i), "");
                set_settings(sf("\"logLevel\":\"debug\",\"http\":{\"listen\":[\"127.0.0.1:%u\"],"
                                "\"tokens\":[{\"token\":{\"credential\":\"http-token\"},\"user\":%u}]}",
                                ports[i], (unsigned)getuid()));
                start(env);
                wait_all_ready(1);
                cr_assert(ht_wait_listening(ports[i], H_TIMEOUT_MS));
        }
        start_haproxy();
}

/* One request through HAProxy (or straight to a daemon's port), the daemons' NOTIFY
 * datagrams drained first: a daemon whose queue of them is full waits in sd_notify(). */
static void request(unsigned port, const char *headers, const char *body, struct ht_answer *a) {
        for (int i = 0; i < 2; i++)
                h_notify_drain(&daemons[i]);
        ht_once(port, "POST", "/mcp", headers, body, a);
}

/* Which daemon answered a's tools/call of demo__env: 'a' or 'b' (0: neither). */
static char daemon_of(const struct ht_answer *a) {
        const char *text = a->body ? strstr(a->body, "\"text\":\"") : NULL;

        if (!text || (text[8] != 'a' && text[8] != 'b') || text[9] != '"')
                return 0;
        return text[8];
}

#define ENV_CALL(id, meta)                                                                                        \
        sf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"demo__env\","          \
           "\"arguments\":{\"name\":\"MCPVISOR_IT_DAEMON\"}%s}}",                                                     \
           id, meta)

Test(haproxy, modern_requests_go_round_robin) {
        unsigned served[2] = { 0, 0 };
        char previous = 0;
        struct ht_answer a;
        char sid[128];

        start_all();
        for (int i = 0; i < CALLS; i++) {
                char who;

                request(front, AUTH JSON_HEADERS MODERN_HEADERS("tools/call") "Mcp-Name: demo__env\r\n",
                        ENV_CALL(i, "," META), &a);
                cr_assert_eq(a.status, 200, "call %d: %d %s", i, a.status, a.body);
                cr_assert(strstr(a.body, sf("\"id\":%d,", i)), "call %d: %s", i, a.body);
                cr_assert_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid), "a modern request made a session");
                who = daemon_of(&a);
                cr_assert(who, "call %d: no daemon named: %s", i, a.body);
                /* round-robin: each request to the other daemon than the one before */
                cr_assert_neq(who, previous, "call %d went to daemon %c again", i, who);
                previous = who;
                served[who - 'a']++;
                ht_answer_done(&a);
        }
        cr_assert_eq(served[0], CALLS / 2, "daemon a served %u of %u", served[0], CALLS);
        cr_assert_eq(served[1], CALLS / 2, "daemon b served %u of %u", served[1], CALLS);

        /* every answer the request's own, whichever daemon took it */
        for (int i = 0; i < CALLS; i++) {
                request(front, AUTH JSON_HEADERS MODERN_HEADERS("tools/call") "Mcp-Name: demo__echo\r\n",
                        sf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                           "\"demo__echo\",\"arguments\":{\"text\":\"call %d\"}," META "}}",
                           100 + i, i),
                        &a);
                cr_assert_eq(a.status, 200, "echo %d: %d %s", i, a.status, a.body);
                cr_assert(strstr(a.body, sf("\"id\":%d,", 100 + i)) && strstr(a.body, sf("\"call %d\"", i)), "echo %d: %s",
                          i, a.body);
                ht_answer_done(&a);
        }
        /* each daemon's log: modern clients of one request each, half of all */
        for (int i = 0; i < 2; i++)
                cr_assert(h_log_count_wait(&daemons[i], "serving a 2026-07-28 client haproxy-it 2.0 without a session", CALLS,
                                           H_TIMEOUT_MS),
                          "daemon %c", 'a' + i);
}

/* A legacy client: initialize through HAProxy, then every request of its session on the
 * daemon that made it (none 404), though a modern request between goes to the other. */
Test(haproxy, legacy_session_kept_on_its_daemon) {
        struct ht_answer a;
        char sid[128], home;

        start_all();
        request(front, AUTH JSON_HEADERS,
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                "\"capabilities\":{},\"clientInfo\":{\"name\":\"legacy-it\",\"version\":\"1\"}}}",
                &a);
        cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid));
        ht_answer_done(&a);
        request(front,
                sf(AUTH JSON_HEADERS "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\n", sid),
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &a);
        cr_assert_eq(a.status, 202, "%d %s", a.status, a.body);
        ht_answer_done(&a);

        home = 0;
        for (int i = 0; i < CALLS; i++) {
                char who;

                request(front,
                        sf(AUTH JSON_HEADERS "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\n", sid),
                        ENV_CALL(10 + i, ""), &a);
                cr_assert_eq(a.status, 200, "call %d of the session: %d %s", i, a.status, a.body);
                who = daemon_of(&a);
                cr_assert(who, "call %d: %s", i, a.body);
                if (!home)
                        home = who;
                cr_assert_eq(who, home, "call %d of the session went to daemon %c, its session is on %c", i, who, home);
                ht_answer_done(&a);

                /* a modern request between, balanced as ever */
                request(front, AUTH JSON_HEADERS MODERN_HEADERS("tools/call") "Mcp-Name: demo__env\r\n",
                        ENV_CALL(500 + i, "," META), &a);
                cr_assert_eq(a.status, 200, "%d %s", a.status, a.body);
                cr_assert(daemon_of(&a), "%s", a.body);
                ht_answer_done(&a);
        }
        /* the session exists on its daemon only: without the stick-table, half the calls
         * would have got this */
        request(ports[home == 'a' ? 1 : 0],
                sf(AUTH JSON_HEADERS "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\n", sid),
                ENV_CALL(99, ""), &a);
        cr_assert_eq(a.status, 404, "the other daemon knows the session: %d %s", a.status, a.body);
        ht_answer_done(&a);
        cr_assert(h_log_wait(&daemons[home - 'a'], "legacy-it", H_TIMEOUT_MS));
        cr_assert_eq(h_log_count(&daemons[home == 'a' ? 1 : 0], "legacy-it"), 0u);
}
