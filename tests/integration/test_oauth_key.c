/* The key that seals the sign-in tokens, made and opened by systemd-creds off the daemon's
 * loop: a stub systemd-creds first in PATH that sleeps before it works (as a TPM2 may),
 * and a client whose pings must be answered meanwhile. A token file in the state
 * directory makes the first start of a server that signs in need the key. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "servers.h"

static struct h_daemon D;
static char T[64];

static void setup(void) {
        strcpy(T, "/tmp/mcpvisor-key-XXXXXX");
        cr_assert_not_null(mkdtemp(T));
        servers_reset(&D);
}

static void teardown(void) {
        servers_teardown();
        h_remove_tree(T);
}

TestSuite(oauth_key, .init = setup, .fini = teardown, .timeout = 60);

static void write_file(const char *path, const char *text, mode_t mode) {
        FILE *f = fopen(path, "w");

        cr_assert_not_null(f, "%s", path);
        fputs(text, f);
        fclose(f);
        cr_assert(chmod(path, mode) == 0);
}

/* systemd-creds as the daemon runs it: encrypt --name=N - PATH, decrypt --name=N PATH -;
 * each call marked in T/calls, then a sleep of 2 s, then the work (the "seal" a copy), or
 * a failure. */
static void install_stub_doing(const char *work) {
        cr_assert(mkdir(sf("%s/bin", T), 0755) == 0);
        write_file(sf("%s/bin/systemd-creds", T),
                   sf("#!/bin/sh\n"
                      "echo \"$1\" >> %s/calls\n"
                      "sleep 2\n"
                      "%s\n", T, work),
                   0755);
        setenv("PATH", sf("%s/bin:%s", T, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin"), 1);
}

static void install_stub(void) {
        install_stub_doing("case \"$1\" in\n"
                           "encrypt) cat > \"$4\" ;;\n"
                           "decrypt) cat \"$3\" ;;\n"
                           "*) exit 1 ;;\n"
                           "esac");
}

static unsigned calls(void) {
        char text[256] = "";
        FILE *f = fopen(sf("%s/calls", T), "r");
        size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
        unsigned n = 0;

        if (f)
                fclose(f);
        text[len] = '\0';
        for (char *p = text; (p = strchr(p, '\n')); p++)
                n++;
        return n;
}

/* While systemd-creds seals a new key (2 s) and then opens it (2 s), the daemon answers a
 * ping within 300 ms every time; then the stored token is judged (it is no sealed file: a
 * sign-in is needed), the key kept for the next start. */
Test(oauth_key, systemd_creds_off_the_loop) {
        char state[128];
        struct h_conn *c;
        long long worst = 0;
        unsigned pings = 0;

        install_stub();
        snprintf(state, sizeof state, "%s/state", T);
        cr_assert(mkdir(state, 0700) == 0 && mkdir(sf("%s/tokens", state), 0700) == 0);
        write_file(sf("%s/tokens/remote.shared", state), "MVT1 not a sealed token", 0600);
        add_entry("\"remote\":{\"url\":\"http://127.0.0.1:9/mcp\",\"auth\":\"oauth\"}");
        start((const char *[]){ sf("STATE_DIRECTORY=%s", state), NULL });
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_initialize(c);
        for (long long end = h_now_ms() + H_TIMEOUT_MS; calls() == 0 && h_now_ms() < end; usleep(10 * 1000))
                h_notify_drain(&D);
        cr_assert_eq(calls(), 1, "systemd-creds was not run");
        /* both steps under way: the loop keeps serving */
        for (long long end = h_now_ms() + 3500; h_now_ms() < end; usleep(50 * 1000)) {
                long long t0 = h_now_ms();
                json_object *r = h_call(c, sf("{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"ping\"}\n", 100 + pings));
                long long took = h_now_ms() - t0;

                cr_assert_not_null(h_get(r, "result"));
                json_object_put(r);
                worst = took > worst ? took : worst;
                pings++;
                h_notify_drain(&D);
        }
        cr_assert_lt(worst, 300, "a ping waited %lld ms while systemd-creds ran", worst);
        cr_assert(h_log_wait(&D, "cannot be used", 10000), "the token file was not judged");
        cr_assert_eq(calls(), 2, "encrypt, then decrypt");
        cr_assert_eq(access(sf("%s/oauth-key.cred", state), F_OK), 0);
        cr_log_info("%u pings, the slowest %lld ms", pings, worst);
        h_close(c);
}

/* systemd-creds that fails (as on a host without a usable key): the stored token needs a
 * sign-in, said with why, and systemd-creds is not run again and again. */
Test(oauth_key, systemd_creds_failing) {
        char state[128];

        install_stub_doing("echo no TPM2 >&2; exit 1");
        snprintf(state, sizeof state, "%s/state", T);
        cr_assert(mkdir(state, 0700) == 0 && mkdir(sf("%s/tokens", state), 0700) == 0);
        write_file(sf("%s/tokens/remote.shared", state), "MVT1 not a sealed token", 0600);
        add_entry("\"remote\":{\"url\":\"http://127.0.0.1:9/mcp\",\"auth\":\"oauth\"}");
        start((const char *[]){ sf("STATE_DIRECTORY=%s", state), NULL });
        cr_assert(h_log_wait(&D, "systemd-creds encrypt could not seal a new key", 10000), "no failure told");
        cr_assert(h_log_wait(&D, "sign-in needed", 10000), "the server does not say a sign-in is needed");
        for (long long end = h_now_ms() + 3000; h_now_ms() < end; usleep(100 * 1000))
                h_notify_drain(&D);
        cr_assert_eq(calls(), 1, "systemd-creds ran %u times", calls());
        cr_assert_neq(access(sf("%s/oauth-key.cred", state), F_OK), 0, "a failed seal was left behind");
}
