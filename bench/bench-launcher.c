/* Start to ready of the bench server through each launcher (issue 16): one daemon with
 * "launcher": "exec", then one with "launcher": "systemd" per sandbox preset of the server
 * (none, basic: the default, strict), each timing `runs` starts of
 * its server from the control socket's "start" until its STATUS= says 1/1 servers ready
 * (the server stopped before each, its run or unit gone: STATUS= says "bench stopped").
 * The difference is what a transient unit costs a start; "none" against "basic" is what the
 * sandbox's part of it is. The systemd launcher needs a systemd as PID 1 and, for a
 * daemon of the bench's (not started by a service manager), root's access to the system
 * manager's private socket: elsewhere nothing is measured and the reason is kept. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAUNCHER_TIMEOUT_MS 30000

const char *launcher_unavailable(void) {
        if (access("/run/systemd/system", F_OK) != 0)
                return "PID 1 is not systemd (no /run/systemd/system): measure it under a real systemd (tests/e2e/launcher prints it)";
        if (geteuid() != 0)
                return "not root: the bench's daemon reaches the system manager through /run/systemd/private";
        return NULL;
}

/* One request on the control socket, answered before the server has moved. */
int bench_control(struct daemon_run *d, const char *method, uint64_t id) {
        struct conn c = { .rfd = -1, .wfd = -1 };
        char path[192], request[160];
        struct line l;
        int r;

        snprintf(path, sizeof path, "%s/control.sock", d->dir);
        snprintf(request, sizeof request, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\",\"params\":{\"name\":\"%s\"}}\n",
                 (unsigned long long)id, method, BENCH_SERVER_NAME);
        r = conn_unix(&c, path);
        if (r >= 0)
                r = conn_write(&c, request, strlen(request));
        if (r >= 0)
                r = conn_read_line(&c, d, now_ns() + (int64_t)LAUNCHER_TIMEOUT_MS * 1000000, &l);
        if (r >= 0 && !line_is_result(l, id))
                r = -EPROTO;
        conn_close(&c);
        return r;
}

/* p50 and max of runs starts under the daemon's launcher. */
static int time_starts(const struct daemon_opts *base, const char *launcher, const char *sandbox, unsigned runs,
                       int64_t *p50, int64_t *max) {
        struct daemon_opts o = *base;
        char members[64];
        struct daemon_run d;
        char settings[256];
        int64_t *took = calloc(runs, sizeof *took), t0;
        int r;

        if (!took)
                return -ENOMEM;
        snprintf(settings, sizeof settings, "%s%s\"launcher\": \"%s\"", base->settings ? base->settings : "",
                 base->settings && base->settings[0] ? ", " : "", launcher);
        o.settings = settings;
        if (sandbox) {
                snprintf(members, sizeof members, "\"sandbox\": \"%s\"", sandbox);
                o.server_members = members;
        }
        r = daemon_start(&d, &o);
        if (r >= 0)
                r = daemon_wait_status(&d, "1/1 servers ready", LAUNCHER_TIMEOUT_MS);
        for (unsigned i = 0; i < runs && r >= 0; i++) {
                r = bench_control(&d, "stop", 2 * i + 1);
                if (r >= 0)
                        r = daemon_wait_status(&d, "0/1 servers ready; " BENCH_SERVER_NAME " stopped", LAUNCHER_TIMEOUT_MS);
                t0 = now_ns();
                if (r >= 0)
                        r = bench_control(&d, "start", 2 * i + 2);
                if (r >= 0)
                        r = daemon_wait_status(&d, "1/1 servers ready", LAUNCHER_TIMEOUT_MS);
                took[i] = now_ns() - t0;
        }
        if (r < 0)
                fprintf(stderr, "mcpvisor-bench: launcher (%s): %s; last status: %s; log: %s\n", settings, strerror(-r),
                        d.status, d.log);
        if (daemon_stop(&d, 10000) != 0 && r >= 0)
                r = -ECHILD;
        if (r >= 0) {
                qsort(took, runs, sizeof *took, cmp_i64);
                *p50 = percentile(took, runs, 50);
                *max = took[runs - 1];
        }
        free(took);
        return r;
}

int measure_launchers(const struct daemon_opts *o, unsigned runs, struct launcher_figures *ret) {
        int r;

        *ret = (struct launcher_figures){ .runs = runs, .unavailable = launcher_unavailable() };
        if (ret->unavailable)
                return 0;
        static const char *const sandbox[N_LAUNCHER_SANDBOXES] = {
                [LAUNCHER_SANDBOX_NONE] = "none", [LAUNCHER_SANDBOX_BASIC] = "basic", [LAUNCHER_SANDBOX_STRICT] = "strict"
        };
        r = time_starts(o, "exec", NULL, runs, &ret->exec_p50, &ret->exec_max);
        for (unsigned i = 0; i < N_LAUNCHER_SANDBOXES && r >= 0; i++)
                r = time_starts(o, "systemd", sandbox[i], runs, &ret->systemd_p50[i], &ret->systemd_max[i]);
        ret->ok = r >= 0;
        return r;
}
