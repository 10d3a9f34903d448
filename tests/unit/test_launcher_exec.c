/* The exec launcher running a server as another user (a server's run_as, run-as.h): the
 * real launcher, process.c and environment.c under a real supervisor, and a real server,
 * the demo server, whose probe tools say whom it runs as, where and with which HOME.
 * Nothing in the configuration sets run_as yet (per-user instances will), so the test
 * sets it on the server as their pool will, before the start. Also the refusals: a
 * daemon that is not root (this test process, dropped to nobody) asked for another user,
 * and a drop the kernel refuses, each a start that fails for good, with its reason.
 * As root only: it takes another user's uid. */
#include <criterion/criterion.h>
#include <dirent.h>
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
#include <sys/prctl.h>
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
        /* As the daemon does: a server that ends before reading is no reason to die. */
        signal(SIGPIPE, SIG_IGN);
        log_capture_start();
        logger_init(&lg, LOG_DEBUG);
        cr_assert_eq(jsonrpc_parser_init(&parser), 0);
}

static void teardown(void) {
        if (geteuid() != 0) /* a test that dropped to nobody */
                cr_assert(setresuid(0, 0, 0) == 0 && setresgid(0, 0, 0) == 0);
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
        /* root's saved uid kept, for the teardown to clean up as root */
        cr_assert_eq(setgroups(0, NULL), 0);
        cr_assert_eq(setresgid(gid, gid, 0), 0);
        cr_assert_eq(setresuid(uid, uid, 0), 0);
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

static void on_exit_ignored(struct process *p, void *userdata) {
}

/* The entries of /proc/PID/fd. */
static unsigned fds_of(pid_t pid) {
        char path[64];
        DIR *d;
        struct dirent *de;
        unsigned n = 0;

        snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
        if (!(d = opendir(path)))
                return 0;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

/* The user it runs as is the attacker: stopping every process of theirs as fast as they
 * can while the daemon spawns theirs (a per-user instance starts when its user asks). The
 * daemon never waits on a child that is the user's to stop (process.h): each spawn returns
 * at once. A uid of no one's, so that the storm stops nothing else on the machine. */
Test(launcher_exec, user_stopping_its_processes_never_stalls_the_daemon) {
        struct run_as storm = { .uid = 4242421, .gid = 4242421, .user = (char *)"attacker", .home = (char *)"/" };
        struct event_base *base = event_base_new();
        struct process procs[40];
        char *argv[] = { "sleep", "30", NULL }, *env[] = { "PATH=/bin", NULL };
        uint64_t began, took;
        pid_t attacker;

        while (getpwuid(storm.uid))
                storm.uid = ++storm.gid;
        cr_assert_not_null(base);
        attacker = fork();
        cr_assert_geq(attacker, 0);
        if (attacker == 0) {
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || setgroups(0, NULL) < 0 || setresgid(storm.gid, storm.gid, storm.gid) < 0 ||
                    setresuid(storm.uid, storm.uid, storm.uid) < 0)
                        _exit(1);
                for (;;)
                        (void)kill(-1, SIGSTOP);
        }
        usleep(50000);
        began = now_usec();
        for (size_t i = 0; i < ARRAY_SIZE(procs); i++) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                int stdio[3] = { dup(null), dup(null), dup(null) };

                close(null);
                cr_assert_eq(process_spawn(&procs[i], base, "/bin/sleep", argv, env, NULL, &storm, stdio,
                                           on_exit_ignored, NULL), 0);
        }
        took = now_usec() - began;
        /* Stopped or not, none holds a descriptor of the daemon's: they are closed before
         * the user may stop it. */
        usleep(300000);
        for (size_t i = 0; i < ARRAY_SIZE(procs); i++)
                cr_expect_leq(fds_of(procs[i].pid), 4, "pid %d (state %c) holds %u descriptors", (int)procs[i].pid,
                              proc_state(procs[i].pid), fds_of(procs[i].pid));
        kill(attacker, SIGKILL);
        waitpid(attacker, NULL, 0);
        for (size_t i = 0; i < ARRAY_SIZE(procs); i++) {
                kill(procs[i].pid, SIGKILL);
                waitpid(procs[i].pid, NULL, 0);
                process_done(&procs[i]);
        }
        event_base_free(base);
        cr_assert_lt(took, 5 * USEC_PER_SEC, "40 spawns took %llu ms", (unsigned long long)(took / 1000));
}
