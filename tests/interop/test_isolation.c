/* Two agents through one daemon, run for real with stateful npm servers (pinned in
 * tests/interop/package-lock.json, installed by scripts/install-test-peers): server-memory,
 * server-sequential-thinking, and @playwright/mcp driving Debian's chromium. isolation.mjs
 * connects agent A and agent B, each an MCP client of its own through `mcpvisorctl connect`,
 * lets A leave state in the server and B look; both stay connected to the end.
 *
 * Each scenario runs twice. With the server shared (the default), B sees what A left: the
 * leak is real, and the scenario can see it (a scenario that saw nothing would make the
 * per-client test pass for nothing). With "instances": "per-client", B sees none of it, A
 * still sees its own, and once both clients are gone no process of the server is left.
 *
 * server-memory keeps its graph in a file (MEMORY_FILE_PATH) that it reads at each call:
 * instances given one file would share the graph through it whatever the daemon does. Its
 * entry runs it through bash with a file of its own process ($$), in both modes, so that
 * the mode is the only difference (docs/operations.md says so for operators).
 *
 * Suite isolation (memory, sequential-thinking): ctest interop.isolation. Suite browser
 * (Playwright and chromium, seconds more a browser): ctest interop.browser. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "http-client.h"
#include "servers.h"

extern char **environ;

#define INTEROP_DIR MCPVISOR_INTEROP_DIR /* tests/interop in the source tree */
#define CTL MCPVISORCTL_PATH              /* the built mcpvisorctl */
#define READY_MS 60000                   /* node servers, a browser, maybe under ASan */
#define RUN_MS 130000                    /* one isolation.mjs run; it has its own 120 s deadline */
/* Debian's chromium: the program itself, not /usr/bin/chromium's shell wrapper */
#define CHROMIUM "/usr/lib/chromium/chromium"

static struct h_daemon D;
static char dir[64];          /* this test's files: HOME, the memory files, the clients' stderr */
static char bin[PATH_MAX];    /* node_modules/.bin */
static char secret[64];       /* what A leaves, unique to the test */
static bool over_http;        /* the agents are HTTP sessions of the front door, not socket clients */
static char target[128];      /* then, the daemon's HTTP endpoint */
#define HTTP_TOKEN "isolation-token-0123456789abcdef0123" /* the HTTP front door's bearer token */

static void setup(void) {
        D.notify_fd = -1; /* nothing to close if a test ends before its daemon starts */
        servers_reset(&D);
        snprintf(bin, sizeof bin, "%s/node_modules/.bin", INTEROP_DIR);
        cr_assert(setenv("PATH", sf("%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin"), 1) == 0);
        cr_assert(setenv("MCPVISORCTL", CTL, 1) == 0);
        strcpy(dir, "/tmp/mcpvisor-isolation-XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
        cr_assert(mkdir(sf("%s/home", dir), 0700) == 0);
        snprintf(secret, sizeof secret, "secret-%d-%lld", (int)getpid(), h_now_ms());
        over_http = false;
        /* what a client started and left behind becomes this process's child, to be found */
        cr_assert(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
}

static void teardown(void) {
        servers_teardown();
        if (dir[0])
                h_remove_tree(dir);
}

TestSuite(isolation, .init = setup, .fini = teardown, .timeout = 150);
TestSuite(browser, .init = setup, .fini = teardown, .timeout = 150);

/* ---- the daemon ---- */

enum mode { SHARED, PER_CLIENT };

/* "name": {command, args, env (PATH to node_modules/.bin, HOME in the test's directory)},
 * with "instances": "per-client" in that mode. args: NULL-terminated. */
static void add_server(const char *name, enum mode mode, const char *command, const char *const *args,
                       const char *more_env) {
        json_object *entry = json_object_new_object(), *a = json_object_new_array(), *env;

        for (; *args; args++)
                json_object_array_add(a, json_object_new_string(*args));
        env = json_tokener_parse(sf("{%s}", more_env));
        cr_assert_not_null(env);
        json_object_object_add(env, "PATH", json_object_new_string(sf("%s:/usr/local/bin:/usr/bin:/bin", bin)));
        json_object_object_add(env, "HOME", json_object_new_string(sf("%s/home", dir)));
        /* the test's mark, inherited by all the server starts (chromium too) */
        json_object_object_add(env, "MCPVISOR_IT_ISOLATION", json_object_new_string(dir));
        json_object_object_add(entry, "command", json_object_new_string(command));
        json_object_object_add(entry, "args", a);
        json_object_object_add(entry, "env", env);
        json_object_object_add(entry, "stopTimeout", json_object_new_int(2));
        if (mode == PER_CLIENT)
                json_object_object_add(entry, "instances", json_object_new_string("per-client"));
        add_entry("\"%s\":%s", name,
                  json_object_to_json_string_ext(entry, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(entry);
}

static void need(const char *program) {
        cr_assert(access(sf("%s/%s", bin, program), X_OK) == 0,
                  "%s is not installed in %s/node_modules: run scripts/install-test-peers", program, INTEROP_DIR);
}

/* A shared server is ready before the clients come; a per-client one has no instance
 * until a client needs it, and the client's first call waits for its start (listWait). */
static void start_daemon(enum mode mode, unsigned servers) {
        static const char *env[2];
        unsigned port;
        FILE *f;

        if (!over_http) {
                set_settings("\"listWait\": 60");
                start(NULL);
        } else { /* the agents over HTTP: a token for this user, the daemon on a free port */
                port = ht_free_port();
                cr_assert_not_null(f = fopen(sf("%s/http-token", dir), "we"));
                fputs(HTTP_TOKEN, f);
                fclose(f);
                env[0] = strdup(sf("CREDENTIALS_DIRECTORY=%s", dir));
                set_settings(sf("\"listWait\": 60, \"http\":{\"listen\":[\"127.0.0.1:%u\"],\"tokens\":[{\"token\":"
                                "{\"credential\":\"http-token\"},\"user\":%u}]}",
                                port, (unsigned)getuid()));
                cr_assert(setenv("MCPVISOR_TOKEN", HTTP_TOKEN, 1) == 0);
                snprintf(target, sizeof target, "http://127.0.0.1:%u/mcp", port);
                start(env);
        }
        if (mode == SHARED)
                cr_assert(h_notify_wait(&D, sf("STATUS=%u/%u servers ready", servers, servers), READY_MS),
                          "the servers did not become ready; got %s", D.notices);
        else
                cr_assert(h_notify_wait(&D, "READY=1", READY_MS), "the daemon did not become ready; got %s", D.notices);
}

static void start_memory(enum mode mode) {
        need("mcp-server-memory");
        /* a graph file per process: $$ is the server's pid once bash execs it */
        add_server("memory", mode, "bash",
                   (const char *[]){ "-c", "MEMORY_FILE_PATH=\"$DIR/memory-$$.jsonl\" exec mcp-server-memory", NULL },
                   sf("\"DIR\": \"%s\"", dir));
        start_daemon(mode, 1);
}

static void start_thinking(enum mode mode) {
        need("mcp-server-sequential-thinking");
        add_server("sequential-thinking", mode, "mcp-server-sequential-thinking", (const char *[]){ NULL },
                   "\"DISABLE_THOUGHT_LOGGING\": \"true\"");
        start_daemon(mode, 1);
}

/* Playwright with Debian's chromium, headless; --isolated keeps each browser's profile in
 * memory (two instances on one profile directory would refuse each other); chromium's own
 * sandbox needs user namespaces a root test may not have. */
static void start_browser(enum mode mode) {
        need("playwright-mcp");
        cr_assert(access(CHROMIUM, X_OK) == 0, "%s not found: run scripts/install-test-peers (Debian's chromium)",
                  CHROMIUM);
        add_server("playwright", mode, "playwright-mcp",
                   (const char *[]){ "--headless", "--isolated", "--browser", "chromium", "--executable-path", CHROMIUM,
                                     "--no-sandbox", "--output-dir", sf("%s/playwright-output", dir), NULL },
                   "");
        start_daemon(mode, 1);
}

/* ---- the clients ---- */

static char *read_file(const char *path) {
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t size = 0;

        if (!f)
                return strdup("");
        FILE *m = open_memstream(&text, &size);
        for (int ch; (ch = fgetc(f)) != EOF;)
                fputc(ch, m);
        fclose(m);
        fclose(f);
        return text;
}

/* After the exit of pgid's leader: true once nothing of its process group is left (what
 * it started is ours to reap: this process is a subreaper); kills the rest at the deadline. */
static bool group_ended(pid_t pgid, long long deadline) {
        for (;;) {
                while (waitpid(-pgid, NULL, WNOHANG) > 0)
                        ;
                if (kill(-pgid, 0) < 0 && errno == ESRCH)
                        return true;
                if (h_now_ms() > deadline) {
                        kill(-pgid, SIGKILL);
                        while (waitpid(-pgid, NULL, 0) > 0)
                                ;
                        return false;
                }
                h_notify_drain(&D);
                poll(NULL, 0, 10); /* exits of processes that may not be ours yet: nothing to wait on */
        }
}

/* Runs isolation.mjs SCENARIO [ARG] in its own process group and returns the facts it
 * printed, asserting it said ok, exited 0 and left nothing running (its bridges). */
static json_object *agents(const char *scenario, const char *arg) {
        char script[PATH_MAX], errpath[128];
        const char *argv[] = { "node", script, over_http ? target : D.sock, scenario, arg, NULL };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        long long deadline = h_now_ms() + RUN_MS;
        char *out = NULL, *err, *last;
        size_t len = 0;
        FILE *o;
        int fds[2], rc, status = -1;
        pid_t pid;
        bool ended;
        json_object *facts;

        snprintf(script, sizeof script, "%s/isolation.mjs", INTEROP_DIR);
        snprintf(errpath, sizeof errpath, "%s/%s.stderr", dir, scenario);
        cr_assert(pipe2(fds, O_CLOEXEC) == 0);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&attr, 0);
        rc = posix_spawnp(&pid, "node", &fa, &attr, (char **)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(fds[1]);
        cr_assert_eq(rc, 0, "cannot run node: %s", strerror(rc));

        o = open_memstream(&out, &len);
        for (;;) {
                struct pollfd p = { .fd = fds[0], .events = POLLIN };
                char buf[65536];
                ssize_t got;

                h_notify_drain(&D);
                if (h_now_ms() > deadline) {
                        kill(-pid, SIGKILL);
                        break;
                }
                if (poll(&p, 1, 50) <= 0)
                        continue;
                got = read(fds[0], buf, sizeof buf);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0)
                        break;
                fwrite(buf, 1, (size_t)got, o);
        }
        fclose(o);
        close(fds[0]);
        while (waitpid(pid, &rc, WNOHANG) == 0) {
                h_notify_drain(&D);
                if (h_now_ms() > deadline + 5000) {
                        kill(-pid, SIGKILL);
                        waitpid(pid, &rc, 0);
                        rc = -1;
                        break;
                }
                poll(NULL, 0, 10); /* another process's exit: nothing to wait on */
        }
        status = rc;
        ended = group_ended(pid, h_now_ms() + 5000);
        err = read_file(errpath);

        last = strrchr(out, '\n');
        while (last && last > out && last[1] == '\0') { /* the last non-empty line */
                *last = '\0';
                last = strrchr(out, '\n');
        }
        facts = json_tokener_parse(last ? last + 1 : out);
        cr_assert_not_null(facts, "isolation.mjs %s printed no facts (wait status %d); stdout:\n%s\nstderr:\n%s", scenario,
                           status, out, err);
        cr_assert(json_object_get_boolean(h_get(facts, "ok")), "isolation.mjs %s failed at step '%s': %s\nstderr:\n%s",
                  scenario, h_str(facts, "step"), h_str(facts, "error"), err);
        cr_assert(status == 0, "isolation.mjs %s: wait status %d; stderr:\n%s", scenario, status, err);
        cr_assert(ended, "isolation.mjs %s: what it started, mcpvisorctl connect among it, still ran 5 s after it exited",
                  scenario);
        free(out);
        free(err);
        return facts;
}

/* Once both agents are gone: no process of the server left, nor anything it started (each
 * per-client instance ended with its client; a shared server would still run). */
static void expect_instances_ended(const char *server) {
        const char *mark = sf("MCPVISOR_IT_ISOLATION=%s", dir);
        long long deadline = h_now_ms() + READY_MS;

        while (h_count_processes_with_env(mark) > 0 && h_now_ms() < deadline) {
                h_notify_drain(&D);
                poll(NULL, 0, 50); /* the instances' ends: no descriptor of ours to wait on */
        }
        cr_assert_eq(h_count_processes_with_env(mark), 0, "%s: processes left after both clients left", server);
}

static bool holds(const char *text, const char *needle) {
        return text && strstr(text, needle);
}

/* ---- server-memory ---- */

static json_object *memory_run(enum mode mode) {
        json_object *facts;

        start_memory(mode);
        facts = agents("memory", secret);
        cr_assert(holds(h_str(facts, "aSees"), secret), "A does not see its own entity: %s", h_str(facts, "aSees"));
        return facts;
}

Test(isolation, memory_shared_b_reads_as_entities) {
        json_object *facts = memory_run(SHARED);

        cr_assert(holds(h_str(facts, "bSees"), secret), "shared, B should read A's entity (the leak): %s",
                  h_str(facts, "bSees"));
        json_object_put(facts);
}

Test(isolation, memory_per_client_b_reads_nothing_of_as) {
        json_object *facts = memory_run(PER_CLIENT);

        cr_assert(!holds(h_str(facts, "bSees"), secret), "B read A's entity: %s", h_str(facts, "bSees"));
        cr_assert(!holds(h_str(facts, "bSees"), "project-falcon"), "B read A's entity: %s", h_str(facts, "bSees"));
        json_object_put(facts);
        expect_instances_ended("memory");
}

/* ---- server-sequential-thinking ---- */

static json_object *thinking_run(enum mode mode) {
        json_object *facts;

        start_thinking(mode);
        facts = agents("thinking", NULL);
        cr_assert_str_eq(h_json_text(h_get(facts, "aSecond.branches")), "[\"a-private-branch\"]", "%s",
                         h_json_text(facts));
        cr_assert_eq(json_object_get_int(h_get(facts, "aSecond.thoughtHistoryLength")), 2, "%s", h_json_text(facts));
        return facts;
}

Test(isolation, thinking_shared_b_hears_as_history) {
        json_object *facts = thinking_run(SHARED);

        cr_assert_eq(json_object_get_int(h_get(facts, "bFirst.thoughtHistoryLength")), 3,
                     "shared, B's first thought should count A's two (the leak): %s", h_json_text(facts));
        cr_assert_str_eq(h_json_text(h_get(facts, "bFirst.branches")), "[\"a-private-branch\"]", "%s",
                         h_json_text(facts));
        json_object_put(facts);
}

/* The same two agents as HTTP sessions of the front door: an instance per session, each
 * ended with its session's DELETE (expect_instances_ended waits far less than a session's
 * idle expiry). */
Test(isolation, thinking_per_client_over_http) {
        json_object *facts;

        over_http = true;
        facts = thinking_run(PER_CLIENT);
        cr_assert_eq(json_object_get_int(h_get(facts, "bFirst.thoughtHistoryLength")), 1, "B heard of A's thoughts: %s",
                     h_json_text(facts));
        cr_assert_str_eq(h_json_text(h_get(facts, "bFirst.branches")), "[]", "B saw A's branch: %s", h_json_text(facts));
        json_object_put(facts);
        cr_assert(h_log_wait(&D, "MCP client connected (from 127.0.0.1:", H_TIMEOUT_MS), "not an HTTP session");
        expect_instances_ended("sequential-thinking");
}

Test(isolation, thinking_per_client_b_starts_afresh) {
        json_object *facts = thinking_run(PER_CLIENT);

        cr_assert_eq(json_object_get_int(h_get(facts, "bFirst.thoughtHistoryLength")), 1, "B heard of A's thoughts: %s",
                     h_json_text(facts));
        cr_assert_str_eq(h_json_text(h_get(facts, "bFirst.branches")), "[]", "B saw A's branch: %s", h_json_text(facts));
        json_object_put(facts);
        expect_instances_ended("sequential-thinking");
}

/* ---- @playwright/mcp and chromium ---- */

static json_object *browser_run(enum mode mode) {
        json_object *facts;

        start_browser(mode);
        facts = agents("browser", secret);
        cr_assert(holds(h_str(facts, "aSees"), sf("session token: %s", secret)), "A does not see its page: %s",
                  h_str(facts, "aSees"));
        return facts;
}

Test(browser, shared_b_sees_as_page) {
        json_object *facts = browser_run(SHARED);

        cr_assert(holds(h_str(facts, "bSees"), secret), "shared, B's snapshot should show A's page (the leak): %s",
                  h_str(facts, "bSees"));
        json_object_put(facts);
}

Test(browser, per_client_b_sees_nothing_of_as_page) {
        json_object *facts = browser_run(PER_CLIENT);

        cr_assert(!holds(h_str(facts, "bSees"), secret), "B saw A's page: %s", h_str(facts, "bSees"));
        cr_assert(!holds(h_str(facts, "bSees"), h_str(facts, "url")), "B saw A's URL: %s", h_str(facts, "bSees"));
        cr_log_info("B's snapshot and tabs: %.400s", h_str(facts, "bSees"));
        json_object_put(facts);
        expect_instances_ended("playwright");
}
