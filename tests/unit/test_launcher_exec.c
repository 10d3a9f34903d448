/* The exec launcher running a server as another user (a server's run_as, run-as.h): the
 * real launcher, process.c and environment.c under a real supervisor, and a real server,
 * the demo server, whose probe tools say whom it runs as, where and with which HOME.
 * Nothing in the configuration sets run_as yet (per-user instances will), so the test
 * sets it on the server as their pool will, before the start. Also the refusals: a
 * daemon that is not root (this test process, dropped to nobody) asked for another user,
 * and a drop the kernel refuses, each a start that fails for good, with its reason.
 * As root only: it takes another user's uid. */
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config-helpers.h"
#include "process.h"
#include "jsonrpc.h"
#include "log.h"
#include "run-as.h"
#include "server-conn.h"
#include "server.h"
#include "supervisor.h"
#include "unit-helpers.h"

static struct logger lg;
static struct jsonrpc_parser parser;
static struct supervisor sv;
static struct server *s;
static struct run_as *as;
static char home_dir[64];

static void setup(void) {
        if (geteuid() != 0)
                cr_skip_test("takes another user's uid: root only");
        log_capture_start();
        logger_init(&lg, LOG_DEBUG);
        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
}

static void teardown(void) {
        if (s) {
                supervisor_done(&sv);
                loop_stop();
                done();
        }
        run_as_free(as);
        if (home_dir[0])
                rmdir(home_dir);
        jsonrpc_parser_done(&parser);
        log_capture_stop();
}

TestSuite(launcher_exec, .init = setup, .fini = teardown, .timeout = 30);

static uid_t nobody_uid(void) {
        struct passwd *pw = getpwnam("nobody");

        cr_assert_not_null(pw, "no user nobody on this machine");
        return pw->pw_uid;
}

static struct run_as *resolve(uid_t uid) {
        struct run_as *r = NULL;
        char *error = NULL;

        cr_assert_eq(run_as_resolve(uid, &r, &error), 0, "%s", error ? error : "");
        return r;
}

/* Server "a", the demo server with its probe tools, restarted on failure, run as r;
 * keys: more JSON members of its entry ("" for none). Started, and waited for until it
 * is ready or failed. */
static void start_server(const char *keys, const struct run_as *r) {
        char *text;

        cr_assert(asprintf(&text,
                           "{\"mcpServers\":{\"a\":{\"command\":\"%s\",\"args\":[\"--probe-tools\"],\"launcher\":\"exec\","
                           "\"restart\":\"on-failure\",\"restartDelay\":0.05,\"healthInterval\":0%s%s}}}",
                           MCPVISOR_DEMO_SERVER_PATH, keys[0] ? "," : "", keys) > 0);
        cr_assert_eq(parse(text), 0, "%s", text);
        free(text);
        cr_assert_eq(supervisor_init(&sv, loop_start(), &lg, &parser, &C, NULL, NULL), 0);
        s = supervisor_find(&sv, "a");
        cr_assert_not_null(s);
        s->run_as = r;
        server_handle(s, SERVER_EV_START, "started by the test");
        WAIT_UNTIL(s->state == SERVER_READY || s->state == SERVER_FAILED);
}

struct answer {
        bool done;
        char *text;
};

static void on_reply(struct child *ch, int status, json_object *result, json_object *error, void *userdata) {
        struct answer *a = userdata;
        json_object *content, *text;

        cr_assert_eq(status, 0);
        cr_assert_not_null(result, "error: %s", json_object_to_json_string(error));
        cr_assert(json_object_object_get_ex(result, "content", &content));
        cr_assert(json_object_object_get_ex(json_object_array_get_idx(content, 0), "text", &text));
        a->text = strdup(json_object_get_string(text));
        a->done = true;
}

/* The text the server's tool name answers with args (JSON text); malloc'd. */
static char *call(const char *name, const char *args) {
        json_object *params = json_object_new_object();
        struct answer a = { 0 };

        json_object_object_add(params, "name", json_object_new_string(name));
        json_object_object_add(params, "arguments", json_tokener_parse(args));
        cr_assert_geq(child_request(server_child(s), "tools/call", params, 5 * USEC_PER_SEC, on_reply, &a), 0);
        WAIT_UNTIL(a.done);
        return a.text;
}

static char *env_of_server(const char *name) {
        char args[128];

        snprintf(args, sizeof args, "{\"name\":\"%s\"}", name);
        return call("env", args);
}

/* "uid=U gid=G groups=A,B cwd=DIR", as the demo server's identity tool says it of r. */
static char *identity_of(const struct run_as *r, const char *cwd) {
        char *text;
        size_t len;

        text = malloc(4096);
        cr_assert_not_null(text);
        len = (size_t)snprintf(text, 4096, "ok uid=%u gid=%u groups=", (unsigned)r->uid, (unsigned)r->gid);
        for (size_t i = 0; i < r->n_groups; i++)
                len += (size_t)snprintf(text + len, 4096 - len, "%s%u", i ? "," : "", (unsigned)r->groups[i]);
        snprintf(text + len, 4096 - len, " cwd=%s", cwd);
        return text;
}

/* Where a home that cannot be entered leaves it: "/". */
static const char *home_or_root(const struct run_as *r) {
        struct stat st;

        return stat(r->home, &st) == 0 && S_ISDIR(st.st_mode) ? r->home : "/";
}

/* The kernel's word on who the server's process is: /proc/PID/status's Uid: and Gid: lines. */
static void expect_process_ids(pid_t pid, uid_t uid, gid_t gid) {
        char path[64], buf[4096], want[128];
        FILE *f;
        size_t n;

        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        cr_assert_not_null(f);
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        snprintf(want, sizeof want, "\nUid:\t%u\t%u\t%u\t%u\n", uid, uid, uid, uid);
        cr_assert_not_null(strstr(buf, want), "%s", buf);
        snprintf(want, sizeof want, "\nGid:\t%u\t%u\t%u\t%u\n", gid, gid, gid, gid);
        cr_assert_not_null(strstr(buf, want), "%s", buf);
}

Test(launcher_exec, runs_as_nobody) {
        _cleanup_free_ char *id = NULL, *want = NULL, *home = NULL, *user = NULL, *logname = NULL;

        as = resolve(nobody_uid());
        start_server("", as);
        cr_assert_eq(s->state, SERVER_READY, "%s", s->cause ? s->cause : "");
        id = call("identity", "{}");
        want = identity_of(as, home_or_root(as));
        cr_assert_str_eq(id, want);
        expect_process_ids(run_main_pid(s->run), as->uid, as->gid);
        home = env_of_server("HOME");
        user = env_of_server("USER");
        logname = env_of_server("LOGNAME");
        cr_assert_str_eq(home, as->home);
        cr_assert_str_eq(user, "nobody");
        cr_assert_str_eq(logname, "nobody");
}

/* A home it can enter is its working directory. */
Test(launcher_exec, home_is_its_working_directory) {
        _cleanup_free_ char *id = NULL, *want = NULL, *home = NULL;

        as = resolve(nobody_uid());
        snprintf(home_dir, sizeof home_dir, "/tmp/run-as-home.XXXXXX");
        cr_assert_not_null(mkdtemp(home_dir));
        cr_assert_eq(chmod(home_dir, 0755), 0);
        free(as->home);
        as->home = strdup(home_dir);
        start_server("", as);
        cr_assert_eq(s->state, SERVER_READY, "%s", s->cause ? s->cause : "");
        id = call("identity", "{}");
        want = identity_of(as, home_dir);
        cr_assert_str_eq(id, want);
        home = env_of_server("HOME");
        cr_assert_str_eq(home, home_dir);
}

/* The entry's cwd wins over the home; HOME stays the user's. */
Test(launcher_exec, cwd_wins_over_home) {
        _cleanup_free_ char *id = NULL, *want = NULL, *home = NULL;

        as = resolve(nobody_uid());
        start_server("\"cwd\":\"/usr\"", as);
        cr_assert_eq(s->state, SERVER_READY, "%s", s->cause ? s->cause : "");
        id = call("identity", "{}");
        want = identity_of(as, "/usr");
        cr_assert_str_eq(id, want);
        home = env_of_server("HOME");
        cr_assert_str_eq(home, as->home);
}

/* Without run_as, as before: the daemon's own user. */
Test(launcher_exec, own_user_without_run_as) {
        _cleanup_free_ char *id = NULL;

        start_server("", NULL);
        cr_assert_eq(s->state, SERVER_READY, "%s", s->cause ? s->cause : "");
        id = call("identity", "{}");
        cr_assert(strncmp(id, "ok uid=0 gid=0 ", 15) == 0, "%s", id);
}

/* The server failed for good with cause: no run, no process, and no restart after its
 * restartDelay. */
static void expect_failed_for_good(const char *cause) {
        cr_assert_eq(s->state, SERVER_FAILED, "state %s: %s", server_state_name(s->state), s->cause ? s->cause : "");
        cr_assert_null(s->run);
        cr_assert_not_null(strstr(s->cause, cause), "%s", s->cause);
        cr_assert_eq(s->starts, 1);
        run_for(300 * 1000);
        cr_assert_eq(s->state, SERVER_FAILED);
        cr_assert_eq(s->starts, 1, "a refused start is not tried again");
}

/* The daemon (this process) runs as nobody: another user's run is refused before any
 * process is made, in words that say why. */
Test(launcher_exec, unprivileged_daemon_refused) {
        uid_t uid = nobody_uid();
        gid_t gid = getpwnam("nobody")->pw_gid;

        as = resolve(0);
        cr_assert_eq(setgroups(0, NULL), 0);
        cr_assert_eq(setresgid(gid, gid, gid), 0);
        cr_assert_eq(setresuid(uid, uid, uid), 0);
        start_server("", as);
        expect_failed_for_good("cannot run 'a' as user root: mcpvisord runs as nobody, not root");
        cr_assert_not_null(strstr(logged(), "cannot run 'a' as user root: mcpvisord runs as nobody, not root"));
}

/* A drop the kernel refuses (more groups than NGROUPS_MAX) is a clear start error, and
 * the child that failed it never ran the program. */
Test(launcher_exec, refused_drop_is_a_start_error) {
        as = resolve(nobody_uid());
        free(as->groups);
        as->n_groups = 70000;
        as->groups = calloc(as->n_groups, sizeof(gid_t));
        cr_assert_not_null(as->groups);
        for (size_t i = 0; i < as->n_groups; i++)
                as->groups[i] = as->gid;
        start_server("", as);
        expect_failed_for_good("cannot run 'a' as user nobody: taking its groups (setgroups) failed: Invalid argument");
}

/* The state letter of /proc/PID/stat, or 0 once the process is gone. */
static char proc_state(pid_t pid) {
        char path[64], buf[512], *after;
        FILE *f;
        size_t n;

        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        if (!(f = fopen(path, "re")))
                return 0;
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        after = strrchr(buf, ')');
        return after && after[1] == ' ' ? after[2] : 0;
}

/* Another user's process still dies with the daemon: PR_SET_PDEATHSIG, which a change of
 * credentials clears, is set after the drop. A daemon of the test's own (a child that
 * spawns the server as nobody, then dies) leaves no server behind. */
Test(launcher_exec, dies_with_the_daemon) {
        int pids[2], status;
        pid_t daemon, pid = 0;
        uint64_t deadline;
        char state;

        as = resolve(nobody_uid());
        cr_assert_eq(pipe2(pids, O_CLOEXEC), 0);
        daemon = fork();
        cr_assert_geq(daemon, 0);
        if (daemon == 0) {
                struct event_base *base = event_base_new();
                struct process p;
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                int stdio[3] = { dup(null), dup(null), dup(null) };
                char *argv[] = { "sleep", "60", NULL }, *env[] = { "PATH=/bin", NULL };

                if (!base || process_spawn(&p, base, "/bin/sleep", argv, env, NULL, as, stdio, NULL, NULL) < 0)
                        _exit(1);
                (void)!write(pids[1], &p.pid, sizeof p.pid);
                _exit(0);
        }
        close(pids[1]);
        cr_assert_eq(read(pids[0], &pid, sizeof pid), (ssize_t)sizeof pid);
        close(pids[0]);
        cr_assert_eq(waitpid(daemon, &status, 0), daemon);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        deadline = now_usec() + 5 * USEC_PER_SEC;
        while ((state = proc_state(pid)) != 0 && state != 'Z' && now_usec() < deadline)
                usleep(10000);
        if (state != 0 && state != 'Z')
                kill(pid, SIGKILL);
        cr_assert(state == 0 || state == 'Z', "pid %d outlived its daemon (state %c)", (int)pid, state);
}
