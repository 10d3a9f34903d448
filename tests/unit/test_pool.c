/* Unit tests for pool.c: a configured server's instances (per client, per user) made on
 * need and owned, spares handed over and replaced, maxInstances, the idle timer of a
 * per-user instance, and a reload of a pool.
 *
 * The pools are a real supervisor's. Its exec launcher is the test's own (this file
 * defines run_exec_ops, as test_server.c does), whose starts fail at once: no process is
 * ever spawned, and what is tested is who has which instance. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-helpers.h"
#include "jsonrpc.h"
#include "launcher.h"
#include "log.h"
#include "pool.h"
#include "run-as.h"
#include "run.h"
#include "supervisor.h"
#include "unit-helpers.h"

static int fake_start(struct run *in, const struct server_config *c, char **env, const struct run_stdio *stdio,
                      char **error) {
        close(stdio->err);
        close(stdio->in);
        close(stdio->out);
        return -ENOEXEC;
}

static const char *fake_describe(const struct run *in, char *buf, size_t size) {
        snprintf(buf, size, "a run of the test's");
        return buf;
}

static const char *fake_target(const struct server_config *c) {
        return c->command;
}

const struct run_ops run_exec_ops = {
        .name = "exec",
        .kind = LAUNCHER_EXEC,
        .words = &run_process_words,
        .target = fake_target,
        .writes_stderr = true,
        .start = fake_start,
        .describe = fake_describe,
};

static struct logger lg;
static struct jsonrpc_parser parser;
static struct supervisor sv;
static bool started;

static void setup(void) {
        log_capture_start();
        logger_init(&lg, LOG_DEBUG);
        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
}

static void teardown(void) {
        if (started)
                supervisor_done(&sv);
        done();
        jsonrpc_parser_done(&parser);
        log_capture_stop();
}

TestSuite(pool, .init = setup, .fini = teardown);

/* A daemon of these servers (the members of "mcpServers"). */
static void start(const char *servers) {
        char *text;

        cr_assert(asprintf(&text, "{\"mcpServers\":{%s}}", servers) > 0);
        cr_assert_eq(parse(text), 0, "%s", text);
        cr_assert_eq(P.errors, 0, "%s: %s", text, P.count ? P.items[0].message : "");
        free(text);
        cr_assert_eq(supervisor_init(&sv, loop_start(), &lg, &parser, &C, NULL, NULL), 0);
        started = true;
}

static struct server_owner client(uint64_t id) {
        return (struct server_owner){ .kind = OWNER_CLIENT, .client_id = id };
}

static struct server_owner user(uid_t uid) {
        return (struct server_owner){ .kind = OWNER_USER, .uid = uid };
}

static struct server *instance(struct pool *p, struct server_owner owner) {
        struct server *s = NULL;
        char *error = NULL;
        int r = pool_instance(p, &owner, &s, &error);

        cr_assert_eq(r, 0, "pool_instance: %d %s", r, error ? error : "");
        cr_assert_null(error);
        cr_assert_not_null(s);
        return s;
}

static bool in_servers(const struct server *s) {
        for (size_t i = 0; i < sv.n_servers; i++)
                if (sv.servers[i] == s)
                        return true;
        return false;
}

Test(pool, per_client_instances_are_their_clients_own) {
        start("\"shared\":{\"command\":\"x\"},\"c\":{\"command\":\"x\",\"instances\":\"per-client\"}");
        struct pool *p = supervisor_find_pool(&sv, "c");

        cr_assert_not_null(p);
        cr_assert_null(supervisor_find(&sv, "c"), "an instanced entry is no shared server");
        cr_assert_null(supervisor_find_pool(&sv, "shared"));
        cr_assert_eq(sv.n_servers, 1, "no instance before a need");

        struct server *a = instance(p, client(1)), *b = instance(p, client(2));
        cr_assert_neq(a, b);
        cr_assert_eq(instance(p, client(1)), a, "the same client, the same instance");
        cr_assert_eq(a->owner.kind, OWNER_CLIENT);
        cr_assert_eq(a->owner.client_id, 1);
        cr_assert_eq(b->owner.client_id, 2);
        cr_assert_eq(a->pool, p);
        cr_assert_eq(a->config, p->config, "instances share their pool's settings");
        cr_assert(in_servers(a) && in_servers(b));
        cr_assert(a->queued, "queued to start on its first need");
        cr_assert_eq(pool_size(p), 2);
        cr_assert_null(supervisor_find(&sv, "c"), "supervisor_find never finds an instance");
        cr_assert_eq(pool_find(p, &(struct server_owner){ .kind = OWNER_CLIENT, .client_id = 3 }), NULL);

        size_t n;
        struct server *const *shared = supervisor_shared(&sv, &n);
        cr_assert_eq(n, 1);
        cr_assert_str_eq(shared[0]->config->name, "shared");

        char status[256];
        supervisor_status(&sv, status, sizeof status);
        cr_assert(strstr(status, "instances"), "STATUS= counts them: %s", status);
}

Test(pool, per_user_instance_is_shared_by_the_users_clients) {
        start("\"u\":{\"command\":\"x\",\"instances\":\"per-user\"}");
        struct pool *p = supervisor_find_pool(&sv, "u");

        struct server_owner o1 = pool_owner_for(p, 1, 65534), o2 = pool_owner_for(p, 2, 65534), o3 = pool_owner_for(p, 3, 1);
        cr_assert_eq(o1.kind, OWNER_USER);
        cr_assert_eq(instance(p, o1), instance(p, o2), "two clients of one uid share it");
        cr_assert_neq(instance(p, o1), instance(p, o3));
        cr_assert_eq(instance(p, o3)->owner.uid, 1);
        cr_assert_eq(pool_size(p), 2);
        /* another user's runs as that user; the daemon's own as the daemon */
        cr_assert_not_null(instance(p, o1)->run_as);
        cr_assert_eq(instance(p, o1)->run_as->uid, 65534);
        cr_assert_null(instance(p, pool_owner_for(p, 4, geteuid()))->run_as);

        struct server *s = NULL;
        char *error = NULL;
        struct server_owner nobody_known = pool_owner_for(p, 5, 4242); /* no such user */
        cr_assert_lt(pool_instance(p, &nobody_known, &s, &error), 0);
        cr_assert(error && strstr(error, "'u'"), "%s", error ? error : "(none)");
        free(error);
        cr_assert_eq(pool_size(p), 3, "nothing made for a user that is not there");
}

Test(pool, client_gone_stops_only_its_instance) {
        start("\"c\":{\"command\":\"x\",\"instances\":\"per-client\"}");
        struct pool *p = supervisor_find_pool(&sv, "c");
        struct server *a = instance(p, client(1)), *b = instance(p, client(2));

        supervisor_client_gone(&sv, 1);
        cr_assert(a->removed, "let go");
        cr_assert_null(a->pool);
        cr_assert_not(a->queued, "no longer waits to start");
        cr_assert_not(b->removed);
        cr_assert_eq(pool_size(p), 1);
        cr_assert_null(pool_find(p, &(struct server_owner){ .kind = OWNER_CLIENT, .client_id = 1 }));
        supervisor_collect(&sv);
        cr_assert_not(in_servers(b) == false);
        cr_assert_eq(sv.n_servers, 1, "the supervisor freed it once it had ended");
        cr_assert(strstr(logged(), "its client disconnected"), "%s", logged());
}

Test(pool, max_instances_refuses_with_the_server_and_limit) {
        start("\"c\":{\"command\":\"x\",\"instances\":\"per-client\",\"maxInstances\":2}");
        struct pool *p = supervisor_find_pool(&sv, "c");
        struct server *s = NULL;
        char *error = NULL;

        instance(p, client(1));
        instance(p, client(2));
        cr_assert_eq(pool_instance(p, &(struct server_owner){ .kind = OWNER_CLIENT, .client_id = 3 }, &s, &error), -EUSERS);
        cr_assert_not_null(error);
        cr_assert(strstr(error, "'c'") && strstr(error, "2") && strstr(error, "maxInstances"), "%s", error);
        free(error);
        cr_assert_eq(pool_size(p), 2, "nothing else moved");
        supervisor_client_gone(&sv, 1);
        instance(p, client(3)); /* room again */
}

Test(pool, spare_handed_over_and_replaced) {
        start("\"c\":{\"command\":\"x\",\"instances\":\"per-client\",\"maxInstances\":2,\"spareInstances\":1}");
        struct pool *p = supervisor_find_pool(&sv, "c");

        supervisor_start_all(&sv);
        cr_assert_eq(pool_size(p), 1);
        struct server *spare = p->members[0]->server;
        cr_assert_eq(spare->owner.kind, OWNER_SPARE);

        struct server *a = instance(p, client(7));
        cr_assert_eq(a, spare, "the spare is handed over");
        cr_assert_eq(a->owner.kind, OWNER_CLIENT);
        cr_assert_eq(pool_size(p), 2, "and replaced at once");
        struct server *replacement = p->members[0]->server == a ? p->members[1]->server : p->members[0]->server;
        cr_assert_eq(replacement->owner.kind, OWNER_SPARE);

        cr_assert_eq(instance(p, client(8)), replacement);
        cr_assert_eq(pool_size(p), 2, "no spare past maxInstances");
        cr_assert(strstr(logged(), "a spare instance handed over to client 7"), "%s", logged());
}

Test(pool, spare_never_runs_as_another_user) {
        start("\"u\":{\"command\":\"x\",\"instances\":\"per-user\",\"spareInstances\":1}");
        struct pool *p = supervisor_find_pool(&sv, "u");

        supervisor_start_all(&sv);
        struct server *spare = p->members[0]->server;
        struct server *other = instance(p, user(geteuid() + 1));
        cr_assert_neq(other, spare, "a spare runs as the daemon's user: not handed to another");
        cr_assert_eq(instance(p, user(geteuid())), spare);
}

Test(pool, per_user_instance_stops_after_instance_idle) {
        start("\"u\":{\"command\":\"x\",\"instances\":\"per-user\",\"instanceIdle\":0.1}");
        struct pool *p = supervisor_find_pool(&sv, "u");
        struct server *a = instance(p, user(65534)), *b = instance(p, user(1));

        supervisor_user_left(&sv, 65534);
        supervisor_user_left(&sv, 1);
        instance(p, user(1)); /* back before its idle time: kept */
        WAIT_UNTIL(a->removed);
        run_for(200 * 1000);
        cr_assert_not(b->removed, "needed again before instanceIdle");
        cr_assert_eq(pool_size(p), 1);
        cr_assert(strstr(logged(), "no client for instanceIdle"), "%s", logged());
}

Test(pool, reload_keeps_changes_and_removes) {
        start("\"same\":{\"command\":\"x\",\"instances\":\"per-client\"},"
              "\"changed\":{\"command\":\"x\",\"instances\":\"per-client\"},"
              "\"gone\":{\"command\":\"x\",\"instances\":\"per-user\"},"
              "\"now_shared\":{\"command\":\"x\",\"instances\":\"per-client\"},"
              "\"now_instanced\":{\"command\":\"x\"}");
        struct server *same = instance(supervisor_find_pool(&sv, "same"), client(1));
        struct server *changed = instance(supervisor_find_pool(&sv, "changed"), client(1));
        struct server *gone = instance(supervisor_find_pool(&sv, "gone"), user(1));
        struct server *now_shared = instance(supervisor_find_pool(&sv, "now_shared"), client(1));
        struct config next;
        json_object *summary = json_object_new_object();

        cr_assert_not_null(supervisor_find(&sv, "now_instanced"));
        done();
        cr_assert_eq(parse("{\"mcpServers\":{\"same\":{\"command\":\"x\",\"instances\":\"per-client\"},"
                           "\"changed\":{\"command\":\"y\",\"instances\":\"per-client\",\"spareInstances\":1},"
                           "\"now_shared\":{\"command\":\"x\"},"
                           "\"now_instanced\":{\"command\":\"x\",\"instances\":\"per-user\"}}}"),
                     0);
        next = C;
        cr_assert_eq(supervisor_reload(&sv, &next, summary), 0);
        cr_assert_not(same->removed, "unchanged: kept");
        cr_assert_eq(supervisor_find_pool(&sv, "same")->members[0]->server, same);
        cr_assert(changed->removed, "changed: stopped, made again on its next need");
        cr_assert_str_eq(supervisor_find_pool(&sv, "changed")->config->command, "y");
        cr_assert_eq(pool_size(supervisor_find_pool(&sv, "changed")), 1, "its spare made anew");
        cr_assert(gone->removed);
        cr_assert_null(supervisor_find_pool(&sv, "gone"));
        cr_assert(now_shared->removed);
        cr_assert_null(supervisor_find_pool(&sv, "now_shared"));
        cr_assert_not_null(supervisor_find(&sv, "now_shared"));
        cr_assert_null(supervisor_find(&sv, "now_instanced"));
        cr_assert_not_null(supervisor_find_pool(&sv, "now_instanced"));
        cr_assert(strstr(json_object_to_json_string(summary), "\"gone\""), "%s", json_object_to_json_string(summary));
        json_object_put(summary);
        supervisor_collect(&sv);
        for (size_t i = 0; i < sv.n_servers; i++)
                cr_assert_not(sv.servers[i]->removed && !server_running(sv.servers[i]), "freed once ended");
}
