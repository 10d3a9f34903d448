/* Instances of a server per client and per user ("instances"): each client's state is its
 * own (the demo server's remember tool keeps a text in its process), a server's requests go
 * to its instance's own client, an instance ends with its client (per-client) or
 * instanceIdle after its user's last client (per-user), maxInstances refuses with the
 * server and the limit, an instance killed mid-call fails only its owner's call, and a
 * spare is handed over and replaced. Every test ends with no process left. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "ctl-proc.h"
#include "http-client.h"
#include "servers.h"

static struct h_daemon D;

static void setup(void) {
        servers_reset(&D);
}

TestSuite(instances, .init = setup, .fini = teardown_no_orphans, .timeout = 60);

/* A shared demo server "s" (for STATUS= to say when the daemon is up) and a demo server "c"
 * run as instances with more keys (JSON members). */
static void start_instanced(const char *keys) {
        add_tagged("s", "", "");
        add_tagged("c", keys, "\"--probe-tools\"");
        start(NULL);
        wait_all_ready(1);
}

/* Live processes of this test's server c (tagged: tests run side by side). */
static unsigned c_processes(void) {
        static char env[256 * 1024];
        DIR *dir = opendir("/proc");
        struct dirent *de;
        unsigned count = 0;

        cr_assert_not_null(dir);
        while ((de = readdir(dir))) {
                pid_t pid = (pid_t)atoi(de->d_name);
                size_t len = pid > 0 ? h_read_environ(pid, env, sizeof env) : 0;

                if (len && h_environ_has(env, len, "MCPVISOR_SERVER=c", true) && h_environ_has(env, len, tag_entry(), true) &&
                    !h_pid_gone(pid))
                        count++;
        }
        closedir(dir);
        return count;
}

/* c__remember through x (text NULL: only ask); returns the pid of the instance that
 * answered, and what it keeps in kept (may be NULL). */
static pid_t remember(struct h_client *x, const char *id, const char *text, char *kept, size_t size) {
        json_object *r = h_client_tool_call(x, id, "c__remember", text ? sf("{\"text\":\"%s\"}", text) : "{}");
        const char *answer = h_result_text(r), *space = strrchr(answer, ' ');
        pid_t pid;

        cr_assert_not_null(space, "%s", h_json_text(r));
        pid = (pid_t)atol(space + 1);
        if (kept)
                snprintf(kept, size, "%.*s", (int)(space - answer), answer);
        json_object_put(r);
        cr_assert_gt(pid, 0);
        return pid;
}

Test(instances, per_client_state_is_not_shared) {
        char kept[256];

        start_instanced("\"instances\":\"per-client\"");
        struct h_client *a = cl_open(), *b = cl_open();

        /* a lists first: its instance's tools beside the shared server's, under the same names */
        json_object *l = h_client_call(a, "1", "tools/list", NULL);
        const char *names = h_tool_names(l);
        cr_assert(strstr(names, "s__echo") && strstr(names, "c__remember"), "%s", names);
        json_object_put(l);
        pid_t pa = remember(a, "2", "secret-of-a", kept, sizeof kept);
        cr_assert_str_eq(kept, "secret-of-a");

        /* b calls at once, with no list before: it waits for its instance, never "not ready" */
        long long asked = h_now_ms();
        pid_t pb = remember(b, "1", NULL, kept, sizeof kept);
        cr_log_info("first call through a new instance (no spare): %lld ms", h_now_ms() - asked);
        cr_assert_neq(pa, pb, "both clients reached one process");
        cr_assert_str_eq(kept, "", "b read a's state");
        remember(b, "2", "secret-of-b", NULL, 0);
        cr_assert_eq(remember(a, "3", NULL, kept, sizeof kept), pa);
        cr_assert_str_eq(kept, "secret-of-a");
        cr_assert_eq(c_processes(), 2);
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

/* What x asked of its instance's ask tool reaches x, and x's answer reaches its instance. */
static void roots_of(struct h_client *x, const char *root) {
        h_client_tool_request(x, "\"r\"", "c__ask", "{\"method\":\"roots/list\"}");
        json_object *u = h_take(x, h_is_method, "roots/list", H_TIMEOUT_MS);

        cr_assert_not_null(u, "the roots/list of this client's instance did not reach it");
        h_sendf(x->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"roots\":[{\"uri\":\"file:///%s\"}]}}\n",
                h_json_text(h_get(u, "id")), root);
        json_object_put(u);
        json_object *r = h_client_answer(x, "\"r\"");
        cr_assert(strstr(h_result_text(r), sf("%s\"", root)), "%s", h_json_text(r));
        json_object_put(r);
}

Test(instances, roots_of_each_from_its_own_client) {
        start_instanced("\"instances\":\"per-client\"");
        struct h_client *a = cl_open_with("{\"roots\":{}}"), *b = cl_open_with("{\"roots\":{}}");

        roots_of(a, "root-of-a");
        roots_of(b, "root-of-b");
        roots_of(a, "root-of-a2");
        cr_assert_null(h_take(b, h_is_method, "roots/list", 200), "b was asked for a's instance");
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

/* A server that asks for its roots as it starts (server-filesystem does), with no call in
 * flight: an instance's request goes to its owner all the same, never to another client. */
Test(instances, request_at_start_goes_to_the_owner) {
        add_tagged("s", "", "");
        add_tagged("c", "\"instances\":\"per-client\"", "\"--probe-tools\",\"--ask-at-start\",\"roots/list\"");
        start(NULL);
        wait_all_ready(1);
        struct h_client *a = cl_open_with("{\"roots\":{}}"), *b = cl_open_with("{\"roots\":{}}");

        h_client_request(a, "1", "tools/list", NULL);
        json_object *u = h_take(a, h_is_method, "roots/list", H_TIMEOUT_MS);
        cr_assert_not_null(u, "the instance's roots/list at its start did not reach its client");
        h_sendf(a->c, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"roots\":[{\"uri\":\"file:///root-of-a\"}]}}\n",
                h_json_text(h_get(u, "id")));
        json_object_put(u);
        json_object_put(h_client_answer(a, "1"));
        cr_assert(h_log_count_wait(&D, "root-of-a", 1, H_TIMEOUT_MS), "the instance did not get a's roots");
        cr_assert_null(h_take(b, h_is_method, "roots/list", 200), "b was asked for a's instance");
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

Test(instances, instance_ends_with_its_client) {
        start_instanced("\"instances\":\"per-client\"");
        struct h_client *a = cl_open(), *b = cl_open();
        pid_t pa = remember(a, "1", "x", NULL, 0), pb = remember(b, "1", "y", NULL, 0);

        h_client_close(a);
        cr_assert(h_pid_gone_wait(pa, H_TIMEOUT_MS), "a's instance outlived a");
        cr_assert(h_log_count_wait(&D, "its client disconnected", 1, H_TIMEOUT_MS));
        cr_assert_not(h_pid_gone(pb), "b's instance ended with a");
        cr_assert_eq(remember(b, "2", NULL, NULL, 0), pb);
        h_client_close(b);
        cr_assert(h_pid_gone_wait(pb, H_TIMEOUT_MS), "b's instance outlived b");
        cr_assert_eq(c_processes(), 0);
        stop_clean();
}

Test(instances, per_user_shared_by_its_users_clients_until_idle) {
        char kept[256];

        start_instanced("\"instances\":\"per-user\",\"instanceIdle\":1");
        struct h_client *a = cl_open(), *b = cl_open();
        pid_t pa = remember(a, "1", "ours", NULL, 0);

        cr_assert_eq(remember(b, "1", NULL, kept, sizeof kept), pa, "two clients of one user, two instances");
        cr_assert_str_eq(kept, "ours");
        h_client_close(a);
        cr_assert_eq(remember(b, "2", NULL, NULL, 0), pa, "its user still has a client");
        long long closed = h_now_ms();
        h_client_close(b);
        cr_assert(h_pid_gone_wait(pa, H_TIMEOUT_MS), "not stopped after instanceIdle");
        cr_assert_geq(h_now_ms() - closed, 900, "stopped before instanceIdle");
        cr_assert(h_log_count_wait(&D, "no client for instanceIdle", 1, H_TIMEOUT_MS));
        stop_clean();
}

/* A client of uid (0: root, connected as usual), initialized. */
static struct h_client *open_as(uid_t uid, gid_t gid) {
        struct h_conn *conn = uid == 0 ? h_connect(D.sock, H_TIMEOUT_MS) : h_connect_as(D.sock, uid, gid, NULL, 0, "agent");
        struct h_client *x = calloc(1, sizeof *x);

        cr_assert(conn && x, "uid %u could not connect", (unsigned)uid);
        x->d = &D;
        x->c = conn;
        x->inbox = json_object_new_array();
        json_object *r = h_client_call(x, "0", "initialize",
                                       "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                                       "\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}");
        cr_assert_eq(h_error_code(r), 0, "%s", h_json_text(r));
        json_object_put(r);
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        return x;
}

static const char *identity_of(struct h_client *x, const char *id) {
        static char text[256];
        json_object *r = h_client_tool_call(x, id, "c__identity", "{}");

        snprintf(text, sizeof text, "%s", h_result_text(r));
        json_object_put(r);
        return text;
}

/* Per-user instances for root and nobody, each running as its user (the exec launcher
 * drops to nobody's groups, gid and uid; its home cannot be entered, so "/"); a uid the
 * user database does not know gets a clear error and no instance. */
Test(instances, per_user_instances_run_as_their_users) {
        set_settings("\"socketMode\":\"0666\"");
        start_instanced("\"instances\":\"per-user\"");
        cr_assert_eq(chmod(D.dir, 0711), 0);
        struct h_client *root = open_as(0, 0), *nobody = open_as(65534, 65534), *unknown = open_as(4242, 4242);

        cr_assert(strstr(identity_of(root, "1"), "uid=0 "), "%s", identity_of(root, "1"));
        const char *who = identity_of(nobody, "1");
        cr_assert(strstr(who, "uid=65534 gid=65534") && strstr(who, "cwd=/"), "nobody's instance: %s", who);
        cr_assert_eq(c_processes(), 2);
        json_object *r = h_client_tool_call(unknown, "1", "c__identity", "{}");
        cr_assert(h_str(r, "error.message") && strstr(h_str(r, "error.message"), "'c'"), "%s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(c_processes(), 2, "an instance was made for a user that is not there");
        h_client_close(unknown);
        h_client_close(nobody);
        h_client_close(root);
        stop_clean();
}

Test(instances, max_instances_refuses_naming_the_server_and_limit) {
        start_instanced("\"instances\":\"per-client\",\"maxInstances\":1");
        struct h_client *a = cl_open(), *b = cl_open();
        pid_t pa = remember(a, "1", "x", NULL, 0);

        json_object *r = h_client_tool_call(b, "1", "c__remember", "{}");
        cr_assert_neq(h_error_code(r), 0, "%s", h_json_text(r));
        const char *message = h_str(r, "error.message");
        cr_assert(strstr(message, "'c'") && strstr(message, "1") && strstr(message, "maxInstances"), "%s", message);
        json_object_put(r);
        /* nothing else moved: b still reaches the shared server, a its instance */
        r = h_client_tool_call(b, "2", "s__echo", "{\"text\":\"hi\"}");
        cr_assert_str_eq(h_result_text(r), "hi");
        json_object_put(r);
        cr_assert_eq(remember(a, "2", NULL, NULL, 0), pa);
        /* a gone, b gets one */
        h_client_close(a);
        cr_assert(h_pid_gone_wait(pa, H_TIMEOUT_MS));
        cr_assert_neq(remember(b, "3", NULL, NULL, 0), pa);
        h_client_close(b);
        stop_clean();
}

Test(instances, killed_instance_fails_only_its_owners_call) {
        start_instanced("\"instances\":\"per-client\"");
        struct h_client *a = cl_open(), *b = cl_open();
        pid_t pa = remember(a, "1", "x", NULL, 0), pb = remember(b, "1", "y", NULL, 0);

        /* each call's first progress says it reached its process */
        h_client_request(a, "2", "tools/call", "{\"name\":\"c__sleep\",\"arguments\":{\"ms\":3000},\"_meta\":{\"progressToken\":\"pa\"}}");
        h_client_request(b, "2", "tools/call", "{\"name\":\"c__sleep\",\"arguments\":{\"ms\":1000},\"_meta\":{\"progressToken\":\"pb\"}}");
        json_object *progress = h_take(a, h_is_method, "notifications/progress", H_TIMEOUT_MS);
        cr_assert_not_null(progress, "a's call made no progress");
        json_object_put(progress);
        progress = h_take(b, h_is_method, "notifications/progress", H_TIMEOUT_MS);
        cr_assert_not_null(progress, "b's call made no progress");
        json_object_put(progress);
        cr_assert_eq(kill(pa, SIGKILL), 0);
        json_object *r = h_client_answer(a, "2");
        cr_assert_neq(h_error_code(r), 0, "a's call survived its instance: %s", h_json_text(r));
        json_object_put(r);
        r = h_client_answer(b, "2");
        cr_assert_eq(h_error_code(r), 0, "b's call failed with a's instance: %s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(remember(b, "3", NULL, NULL, 0), pb, "b's instance was restarted");
        /* a's instance restarts alone, by the restart policy */
        cr_assert(h_log_count_wait(&D, "[c] backoff -> starting", 1, H_TIMEOUT_MS));
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

Test(instances, spare_handed_over_and_replaced) {
        start_instanced("\"instances\":\"per-client\",\"spareInstances\":1");
        cr_assert(h_log_count_wait(&D, "[c] starting -> ready", 1, H_TIMEOUT_MS), "no spare started");
        cr_assert_eq(c_processes(), 1);

        long long asked = h_now_ms();
        struct h_client *a = cl_open();
        pid_t pa = remember(a, "1", "x", NULL, 0);
        long long waited = h_now_ms() - asked;
        cr_assert(h_log_count_wait(&D, "a spare instance handed over to client", 1, H_TIMEOUT_MS));
        cr_assert(h_log_count_wait(&D, "[c] starting -> ready", 2, H_TIMEOUT_MS), "the spare was not replaced");
        cr_assert_eq(c_processes(), 2);
        cr_log_info("first call through a spare: %lld ms", waited);
        h_client_close(a);
        cr_assert(h_pid_gone_wait(pa, H_TIMEOUT_MS));
        stop_clean();
}

/* A client initialized in profile (raw initialize with params._meta). */
static struct h_client *open_in_profile(const char *profile) {
        struct h_client *x = h_client_open(&D, true, NULL);
        json_object *r = h_client_call(x, "0", "initialize",
                                       sf("{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                                          "\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"},"
                                          "\"_meta\":{\"mcpvisor/profile\":\"%s\"}}",
                                          profile));

        cr_assert_eq(h_error_code(r), 0, "%s", h_json_text(r));
        json_object_put(r);
        h_send(x->c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        return x;
}

Test(instances, access_rules_and_profiles_apply_to_instances) {
        set_settings("\"profiles\":{\"narrow\":{\"servers\":[\"s\"]}},"
                     "\"access\":{\"rules\":[{\"tools\":[\"c__remember\"],\"action\":\"deny\"}]}");
        start_instanced("\"instances\":\"per-client\"");
        struct h_client *narrow = open_in_profile("narrow"), *plain = cl_open();

        /* outside its profile: not found, and no instance made for it */
        json_object *r = h_client_call(narrow, "1", "tools/list", NULL);
        cr_assert_null(strstr(h_tool_names(r), "c__"), "%s", h_tool_names(r));
        cr_assert(strstr(h_tool_names(r), "s__echo"), "%s", h_tool_names(r));
        json_object_put(r);
        r = h_client_tool_call(narrow, "2", "c__echo", "{\"text\":\"hi\"}");
        cr_assert(h_str(r, "error.message") && strstr(h_str(r, "error.message"), "Unknown tool"), "%s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(c_processes(), 0, "an instance was started for a client that may not see it");

        /* a denied tool of an instance: not listed, refused as permission denied */
        r = h_client_call(plain, "1", "tools/list", NULL);
        cr_assert(strstr(h_tool_names(r), "c__echo"), "%s", h_tool_names(r));
        cr_assert_null(strstr(h_tool_names(r), "c__remember"), "%s", h_tool_names(r));
        json_object_put(r);
        r = h_client_tool_call(plain, "2", "c__remember", "{}");
        cr_assert(h_str(r, "error.message") && strstr(h_str(r, "error.message"), "permission denied: tool 'c__remember'"),
                  "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_tool_call(plain, "3", "c__echo", "{\"text\":\"hi\"}");
        cr_assert_str_eq(h_result_text(r), "hi");
        json_object_put(r);
        cr_assert_eq(c_processes(), 1);
        h_client_close(narrow);
        h_client_close(plain);
        stop_clean();
}

Test(instances, log_messages_reach_only_the_owner) {
        start_instanced("\"instances\":\"per-client\"");
        struct h_client *a = cl_open(), *b = cl_open();

        remember(a, "1", "x", NULL, 0);
        remember(b, "1", "y", NULL, 0);
        json_object_put(h_client_call(a, "2", "logging/setLevel", "{\"level\":\"debug\"}"));
        json_object_put(h_client_call(b, "2", "logging/setLevel", "{\"level\":\"debug\"}"));
        json_object_put(h_client_tool_call(a, "3", "c__log", "{\"text\":\"secret-of-a\"}"));
        json_object *m = h_take(a, h_is_method, "notifications/message", H_TIMEOUT_MS);
        cr_assert_not_null(m, "a did not hear its own instance");
        cr_assert(strstr(h_json_text(m), "secret-of-a"), "%s", h_json_text(m));
        json_object_put(m);
        /* b, whose own instance is c too, hears nothing of a's: after its own call's message */
        json_object_put(h_client_tool_call(b, "3", "c__log", "{\"text\":\"of-b\"}"));
        m = h_take(b, h_is_method, "notifications/message", H_TIMEOUT_MS);
        cr_assert_not_null(m);
        cr_assert(strstr(h_json_text(m), "of-b"), "b heard a's instance: %s", h_json_text(m));
        json_object_put(m);
        cr_assert_eq(h_inbox_drop(b, h_is_method, "notifications/message"), 0, "b heard another instance");
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

/* Two clients subscribe to the same URI, each at its own instance: each is subscribed
 * there (one URI, two servers), each hears its own instance's updates, and an
 * unsubscribe ends only its own. */
Test(instances, resource_updates_of_each_instance_reach_its_owner) {
        add_tagged("s", "", "\"--no-resources\""); /* a URI both list would be the shared server's */
        add_tagged("c", "\"instances\":\"per-client\"", "\"--probe-tools\",\"--subscribe\"");
        start(NULL);
        wait_all_ready(1);
        struct h_client *a = cl_open(), *b = cl_open();

        remember(a, "1", "x", NULL, 0);
        remember(b, "1", "y", NULL, 0);
        json_object *r = h_client_call(a, "2", "resources/subscribe", "{\"uri\":\"demo://readme\"}");
        cr_assert_eq(h_error_code(r), 0, "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(b, "2", "resources/subscribe", "{\"uri\":\"demo://readme\"}");
        cr_assert_eq(h_error_code(r), 0, "b could not subscribe at its own instance: %s", h_json_text(r));
        json_object_put(r);
        cr_assert(h_log_count_wait(&D, "c: subscribed demo://readme", 2, H_TIMEOUT_MS), "not subscribed at both instances");
        json_object *u = h_take(a, h_is_method, "notifications/resources/updated", H_TIMEOUT_MS);
        cr_assert_not_null(u, "a heard no update");
        json_object_put(u);
        u = h_take(b, h_is_method, "notifications/resources/updated", H_TIMEOUT_MS);
        cr_assert_not_null(u, "b heard no update");
        json_object_put(u);

        r = h_client_call(a, "3", "resources/unsubscribe", "{\"uri\":\"demo://readme\"}");
        json_object_put(r);
        cr_assert(h_log_count_wait(&D, "c: unsubscribed demo://readme", 1, H_TIMEOUT_MS));
        h_inbox_drop(a, h_is_method, "notifications/resources/updated");
        /* b's go on (each 200 ms); a hears none of them */
        for (int i = 0; i < 3; i++) {
                u = h_take(b, h_is_method, "notifications/resources/updated", H_TIMEOUT_MS);
                cr_assert_not_null(u, "b's subscription ended with a's");
                json_object_put(u);
        }
        cr_assert_null(h_take(a, h_is_method, "notifications/resources/updated", 100), "a heard b's instance");
        cr_assert_eq(h_log_count(&D, "c: unsubscribed demo://readme"), 1);
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

/* Each instance adds a tool 300 ms after it starts: its owner is told its list changed,
 * another client holding its own list of the same server is not. */
Test(instances, list_changes_reach_only_the_owner) {
        add_tagged("s", "", "");
        add_tagged("c", "\"instances\":\"per-client\"", "\"--list-changed-after-ms\",\"300\"");
        start(NULL);
        wait_all_ready(1);
        struct h_client *a = cl_open(), *b = cl_open();
        json_object *r, *n;

        r = h_client_call(b, "1", "tools/list", NULL);
        cr_assert(strstr(h_tool_names(r), "c__echo"), "%s", h_tool_names(r));
        json_object_put(r);
        n = h_take(b, h_is_method, "notifications/tools/list_changed", H_TIMEOUT_MS);
        cr_assert_not_null(n, "b was not told of its own instance's new tool");
        json_object_put(n);
        r = h_client_call(b, "2", "tools/list", NULL);
        cr_assert(strstr(h_tool_names(r), "c__late_tool"), "%s", h_tool_names(r));
        json_object_put(r);

        r = h_client_call(a, "1", "tools/list", NULL);
        cr_assert_null(strstr(h_tool_names(r), "c__late_tool"), "a's new instance came with b's tool: %s", h_tool_names(r));
        json_object_put(r);
        n = h_take(a, h_is_method, "notifications/tools/list_changed", H_TIMEOUT_MS);
        cr_assert_not_null(n, "a was not told of its own instance's new tool");
        json_object_put(n);
        cr_assert_null(h_take(b, h_is_method, "notifications/tools/list_changed", 300), "b was told of a's instance");
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

/* ---- an HTTP session's instance ---- */

#define TOKEN "it-token-instances-0123456789abcdef"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
#define JSON_HEADERS "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"

Test(instances, http_session_instance_ends_with_its_delete) {
        char creds[] = "/tmp/mcpvisor-inst-XXXXXX", sid[64], *text;
        unsigned port = ht_free_port();
        struct ht_answer a;
        FILE *f;

        cr_assert_not_null(mkdtemp(creds));
        f = fopen(sf("%s/tok", creds), "w");
        cr_assert_not_null(f);
        fprintf(f, "%s\n", TOKEN);
        fclose(f);
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"tokens\":[{\"token\":{\"credential\":\"tok\"},\"user\":%u}]}",
                        port, (unsigned)getuid()));
        add_tagged("s", "", "");
        add_tagged("c", "\"instances\":\"per-client\"", "\"--probe-tools\"");
        start((const char *const[]){ sf("CREDENTIALS_DIRECTORY=%s", creds), NULL });
        wait_all_ready(1);

        ht_once(port, "POST", "/mcp", AUTH JSON_HEADERS,
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                "\"capabilities\":{},\"clientInfo\":{\"name\":\"it-agent\",\"version\":\"1\"}}}",
                &a);
        cr_assert_eq(a.status, 200, "initialize: %d %s", a.status, a.body);
        cr_assert_not_null(ht_header(&a, "Mcp-Session-Id", sid, sizeof sid));
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", sf(AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid),
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &a);
        ht_answer_done(&a);
        ht_once(port, "POST", "/mcp", sf(AUTH JSON_HEADERS "Mcp-Session-Id: %s\r\n", sid),
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"c__remember\","
                "\"arguments\":{\"text\":\"h\"}}}",
                &a);
        cr_assert_eq(a.status, 200, "tools/call: %d %s", a.status, a.body);
        text = strstr(a.body, "\"text\":\"h ");
        cr_assert_not_null(text, "%s", a.body);
        pid_t pid = (pid_t)atol(text + strlen("\"text\":\"h "));
        ht_answer_done(&a);
        cr_assert_gt(pid, 0);
        cr_assert_eq(c_processes(), 1);

        ht_once(port, "DELETE", "/mcp", sf(AUTH "Mcp-Session-Id: %s\r\n", sid), NULL, &a);
        cr_assert(a.status >= 200 && a.status < 300, "DELETE: %d", a.status);
        ht_answer_done(&a);
        cr_assert(h_pid_gone_wait(pid, H_TIMEOUT_MS), "the session's instance outlived its DELETE");
        h_remove_tree(creds);
        stop_clean();
}

/* ---- operators: status, STATUS=, stop ---- */

static struct proc R;

static int ctl(const char *const *args) {
        proc_free(&R);
        proc_start(&R, &D, args, NULL);
        proc_close_stdin(&R);
        return proc_wait(&R, H_TIMEOUT_MS);
}

#define CTL(...) ctl((const char *const[]){ "-C", D.control, "-s", D.sock, __VA_ARGS__, NULL })

/* The row of status --json for the instance whose pid is pid. */
static json_object *row_of(json_object *status, pid_t pid) {
        json_object *servers = h_get(status, "servers");

        for (size_t i = 0; i < json_object_array_length(servers); i++) {
                json_object *row = json_object_array_get_idx(servers, i);

                if (h_get(row, "pid") && json_object_get_int(h_get(row, "pid")) == pid)
                        return row;
        }
        return NULL;
}

Test(instances, status_and_stop_by_owner) {
        start_instanced("\"instances\":\"per-client\"");
        /* none yet: the server is known all the same */
        cr_assert_eq(CTL("status", "c"), 0, "%s %s", R.outbuf, R.errbuf);
        cr_assert(strstr(R.outbuf, "c: per-client, 0 instances (at most 64)"), "%s", R.outbuf);
        cr_assert_eq(CTL("logs", "c"), 1, "%s", R.outbuf);
        cr_assert(strstr(R.errbuf, "run as instances"), "%s", R.errbuf);
        struct h_client *a = cl_open(), *b = cl_open();
        pid_t pa = remember(a, "1", "x", NULL, 0), pb = remember(b, "1", "y", NULL, 0);

        cr_assert(h_notify_wait(&D, "2/2 instances", H_TIMEOUT_MS), "STATUS= does not count them: %s", D.notices);
        int r = CTL("status", "--json");
        cr_assert(r == 0 || r == 3, "status --json exited %d: %s", r, R.errbuf);
        json_object *status = json_tokener_parse(R.outbuf), *ra = row_of(status, pa);
        cr_assert_not_null(ra, "no row of a's instance: %s", R.outbuf);
        cr_assert_not_null(row_of(status, pb));
        cr_assert_str_eq(h_str(ra, "name"), "c");
        const char *owner = h_str(ra, "owner");
        cr_assert_not_null(owner);
        cr_assert(strncmp(owner, "client ", 7) == 0, "%s", owner);
        cr_assert_geq(json_object_get_int(h_get(ra, "calls")), 1);
        json_object *instanced = h_get(status, "instanced");
        cr_assert_eq(json_object_array_length(instanced), 1);
        cr_assert_str_eq(h_str(json_object_array_get_idx(instanced, 0), "name"), "c");
        cr_assert_eq(json_object_get_int(h_get(json_object_array_get_idx(instanced, 0), "count")), 2);
        char id[32];
        snprintf(id, sizeof id, "%s", owner + 7);
        json_object_put(status);

        r = CTL("status");
        cr_assert(r == 0 || r == 3, "status exited %d: %s", r, R.errbuf);
        cr_assert(strstr(R.outbuf, sf("c (client %s)", id)), "%s", R.outbuf);
        cr_assert(strstr(R.outbuf, "c: per-client, 2 instances (at most 64)"), "%s", R.outbuf);

        cr_assert_eq(CTL("stop", "c", "--client", id), 0, "%s %s", R.outbuf, R.errbuf);
        cr_assert(strstr(R.outbuf, "c: 1 instance stopped"), "%s", R.outbuf);
        cr_assert(h_pid_gone_wait(pa, H_TIMEOUT_MS));
        cr_assert_not(h_pid_gone(pb), "b's instance stopped with a's");
        cr_assert_eq(CTL("stop", "c", "--client", "999999"), 1, "%s", R.outbuf);

        pid_t again = remember(a, "2", NULL, NULL, 0);
        cr_assert_neq(again, pa, "a's instance is made again on its next need");
        cr_assert_eq(CTL("stop", "c"), 0, "%s %s", R.outbuf, R.errbuf);
        cr_assert(strstr(R.outbuf, "c: 2 instances stopped"), "%s", R.outbuf);
        cr_assert(h_pid_gone_wait(again, H_TIMEOUT_MS));
        cr_assert(h_pid_gone_wait(pb, H_TIMEOUT_MS));
        proc_free(&R);
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

/* mcpvisorctl access: a server run as instances is one row, however many instances run. */
Test(instances, access_query_names_the_server_once) {
        start_instanced("\"instances\":\"per-client\"");
        struct h_client *a = cl_open(), *b = cl_open();

        remember(a, "1", "x", NULL, 0);
        remember(b, "1", "y", NULL, 0);
        cr_assert_eq(CTL("access", "--user", "root", "--json"), 0, "%s", R.errbuf);
        json_object *o = json_tokener_parse(R.outbuf), *servers = h_get(o, "servers");
        unsigned rows_of_c = 0;

        cr_assert_not_null(servers, "%s", R.outbuf);
        for (size_t i = 0; i < json_object_array_length(servers); i++) {
                json_object *row = json_object_array_get_idx(servers, i);

                if (strcmp(h_str(row, "name"), "c") == 0) {
                        rows_of_c++;
                        cr_assert_str_eq(h_str(row, "instances"), "per-client");
                        cr_assert_str_eq(h_str(row, "verdict"), "allow");
                }
        }
        cr_assert_eq(rows_of_c, 1, "%s", R.outbuf);
        json_object_put(o);
        proc_free(&R);
        h_client_close(a);
        h_client_close(b);
        stop_clean();
}

/* A spare handed over is asked for its owner's log level, as a new instance would be. */
Test(instances, spare_handed_over_takes_its_owners_log_level) {
        /* no replacement (maxInstances 1), whose start would have the levels decided again */
        start_instanced("\"instances\":\"per-client\",\"spareInstances\":1,\"maxInstances\":1");
        cr_assert(h_log_count_wait(&D, "[c] starting -> ready", 1, H_TIMEOUT_MS), "no spare started");
        struct h_client *a = cl_open();

        json_object_put(h_client_call(a, "1", "logging/setLevel", "{\"level\":\"error\"}"));
        remember(a, "2", "x", NULL, 0);
        cr_assert(h_log_count_wait(&D, "a spare instance handed over to client", 1, H_TIMEOUT_MS));
        cr_assert(h_log_count_wait(&D, "c: log level error", 1, H_TIMEOUT_MS), "the spare kept the default level");
        h_client_close(a);
        stop_clean();
}

/* initialize comes before a client has an instance: it tells the instructions the server's
 * instances gave (here the spare's), only to a client whose class may use the server. */
Test(instances, initialize_tells_the_instructions_of_its_instances) {
        set_settings("\"profiles\":{\"narrow\":{\"servers\":[\"s\"]}}");
        add_tagged("s", "", "");
        add_tagged("c", "\"instances\":\"per-client\",\"spareInstances\":1", "\"--instructions\",\"C keeps state.\"");
        start(NULL);
        wait_all_ready(1);
        cr_assert(h_log_count_wait(&D, "[c] starting -> ready", 1, H_TIMEOUT_MS), "no spare started");

#define INIT(meta) "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}" meta "}"
        struct h_client *a = h_client_open(&D, true, NULL), *narrow = h_client_open(&D, true, NULL);
        json_object *r = h_client_call(a, "0", "initialize", INIT(""));
        const char *text = h_str(r, "result.instructions");
        cr_assert(text && strstr(text, "## c\nC keeps state.\n"), "%s", h_json_text(r));
        json_object_put(r);
        r = h_client_call(narrow, "0", "initialize", INIT(",\"_meta\":{\"mcpvisor/profile\":\"narrow\"}"));
        text = h_str(r, "result.instructions");
        cr_assert(!text || !strstr(text, "C keeps state."), "%s", h_json_text(r));
        json_object_put(r);
        h_client_close(a);
        h_client_close(narrow);
        stop_clean();
#undef INIT
}
