/* The shipped example configuration, docs/examples/mcpvisor.json (installed as
 * /usr/share/doc/mcpvisor/examples/mcpvisor.json), run for real: it must pass --check-config
 * without a warning, and every server it enables must start and become ready.
 *
 * Its npm servers are run as the example says, "npx -y PACKAGE@VERSION", without fetching
 * anything: the same versions are pinned in tests/interop/package.json (checked below, so the
 * two cannot drift apart) and installed in tests/interop/node_modules by
 * scripts/install-test-peers. npx looks a package up in the local project first, the nearest
 * directory above its working directory with a package.json or node_modules: the daemon runs
 * with tests/interop as its working directory, which its servers inherit, so npx finds each
 * PACKAGE@VERSION there and runs its bin from node_modules/.bin. Its HOME is a fresh
 * directory whose .npmrc says offline=true: a package that is not there makes npx fail at
 * once (ENOTCACHED) instead of downloading it, and the test fails.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "servers.h"

#define INTEROP_DIR MCPVISOR_INTEROP_DIR /* tests/interop in the source tree */
#define EXAMPLE MCPVISOR_SOURCE_DIR "/docs/examples/mcpvisor.json"
#define PACKAGED_CONFIG MCPVISOR_SOURCE_DIR "/packaging/mcpvisor.json"
#define READY_MS 60000 /* several node servers starting at once, maybe under ASan */
#define STOP_MS 15000  /* every server closed the MCP way, within its stopTimeout + killTimeout */

static struct h_daemon D;
static char home[64]; /* the servers' HOME: .npmrc and npm's cache */

static void setup(void) {
        FILE *f;

        D.notify_fd = -1; /* nothing to close if a test ends before its daemon starts */
        servers_reset(&D);
        strcpy(home, "/tmp/mcpvisor-example-XXXXXX");
        cr_assert_not_null(mkdtemp(home));
        f = fopen(sf("%s/.npmrc", home), "we");
        cr_assert_not_null(f);
        fputs("offline=true\nupdate-notifier=false\nfund=false\naudit=false\n", f);
        fclose(f);
}

static void teardown(void) {
        servers_teardown();
        if (home[0])
                h_remove_tree(home);
}

TestSuite(example, .init = setup, .fini = teardown, .timeout = 120);

/* Runs mcpvisord --check-config on path; returns its exit status, its output in out. */
static int check_config(const char *path, char *out, size_t size) {
        FILE *p = popen(sf("'%s' --check-config --config '%s' 2>&1", h_daemon_path(), path), "re");
        size_t len;
        int status;

        cr_assert_not_null(p);
        len = fread(out, 1, size - 1, p);
        out[len] = '\0';
        status = pclose(p);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(example, check_config) {
        static const char *const files[] = { EXAMPLE, PACKAGED_CONFIG };
        char out[4096];

        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
                cr_expect_eq(check_config(files[i], out, sizeof out), 0, "%s", out);
                cr_expect(strstr(out, ": valid: ") && strstr(out, " 0 warnings"), "%s", out);
        }
}

static json_object *load(const char *path) {
        json_object *o = json_object_from_file(path);

        cr_assert_not_null(o, "%s: %s", path, json_util_get_last_err());
        return o;
}

static bool disabled(json_object *entry) {
        json_object *d;

        return json_object_object_get_ex(entry, "disabled", &d) && json_object_get_boolean(d);
}

/* The PACKAGE and VERSION of an "npx -y PACKAGE@VERSION ..." entry, split at its last '@'
 * (a scope's '@' comes first); asserts that shape. */
static void npx_package(const char *name, json_object *entry, char *package, size_t size, const char **version) {
        const char *spec = h_str(entry, "args.1"), *at = strrchr(spec, '@');

        cr_assert(!strcmp(h_str(entry, "args.0"), "-y"), "%s: npx without -y asks before installing", name);
        cr_assert(at && at != spec && at[1] && strspn(at + 1, "0123456789.") == strlen(at + 1),
                  "%s: '%s' is not pinned to an exact version (PACKAGE@1.2.3)", name, spec);
        snprintf(package, size, "%.*s", (int)(at - spec), spec);
        *version = at + 1;
}

/* Every npm package of the example is pinned; those of the servers it enables are the ones
 * tests/interop/package.json pins, which this suite runs. */
Test(example, npm_versions_match_the_tests) {
        json_object *example = load(EXAMPLE), *tests = load(INTEROP_DIR "/package.json"), *deps, *pinned;
        unsigned npx = 0;

        cr_assert(json_object_object_get_ex(tests, "dependencies", &deps));
        json_object_object_foreach(h_get(example, "mcpServers"), name, entry) {
                const char *version, *have;
                char package[256];

                if (strcmp(h_str(entry, "command"), "npx"))
                        continue;
                npx_package(name, entry, package, sizeof package, &version);
                npx++;
                if (disabled(entry))
                        continue;
                have = json_object_object_get_ex(deps, package, &pinned) ? json_object_get_string(pinned) : "nothing";
                cr_expect(!strcmp(have, version),
                          "%s: the example runs %s@%s, tests/interop/package.json pins %s: change both together "
                          "(npm install --save-exact %s@VERSION in tests/interop)",
                          name, package, version, have, package);
        }
        cr_expect_gt(npx, 0);
        json_object_put(example);
        json_object_put(tests);
}

/* The example as text; *enabled gets the number of servers it enables. */
static char *example_text(unsigned *enabled) {
        json_object *example = load(EXAMPLE);
        char *text;

        *enabled = 0;
        json_object_object_foreach(h_get(example, "mcpServers"), name, entry) {
                (void)name;
                *enabled += !disabled(entry);
        }
        text = strdup(json_object_to_json_string(example));
        json_object_put(example);
        return text;
}

Test(example, every_server_starts) {
        char home_env[96], *config, *log;
        const char *const env[] = { home_env, NULL };
        struct h_opts o = { .env = env };
        unsigned n;
        bool ready;
        int status;

        cr_assert(access(INTEROP_DIR "/node_modules", R_OK) == 0,
                  "the npm packages are not installed in %s/node_modules: run scripts/install-test-peers", INTEROP_DIR);
        cr_assert(chdir(INTEROP_DIR) == 0); /* where npx finds them, see above */
        snprintf(home_env, sizeof home_env, "HOME=%s", home);
        o.config = config = example_text(&n);
        h_start(&D, &o);
        free(config);
        ready = h_notify_wait(&D, sf("STATUS=%u/%u servers ready", n, n), READY_MS);
        log = h_log_text(&D);
        cr_assert(ready, "not all %u servers of the example became ready within %d ms; the daemon's log:\n%s", n,
                  READY_MS, log);
        free(log);
        status = h_stop_draining(&D, SIGTERM, STOP_MS);
        cr_assert(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "mcpvisord did not stop cleanly");
}
