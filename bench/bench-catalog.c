/* Catalogue memory (issue 14, item 12): a daemon whose one server offers many tools, its
 * VmRSS once ready and again after the server's restart (a new catalogue replacing the
 * old), and how long a client takes to list them all, page after page: what each item costs
 * the daemon, and that writing the pages does not get slower for it. The server is the demo
 * server (mcpvisor-demo-server --tools N --page-size 0: its ten tools and N more, all in
 * one page), as docs/performance.md measured it. */
#include "bench.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CATALOG_TIMEOUT_MS 600000
/* The demo server's own tools, besides the N it is asked for. */
#define DEMO_TOOLS 10

/* Waits until the server was seen not ready, then ready again. */
static int wait_ready_again(struct daemon_run *d) {
        int64_t deadline = now_ns() + (int64_t)CATALOG_TIMEOUT_MS * 1000000;

        while (!(d->saw_unready && strstr(d->status, "1/1 servers ready"))) {
                if (ms_left(deadline) == 0)
                        return -ETIMEDOUT;
                poll(&(struct pollfd){ d->notify_fd, POLLIN, 0 }, 1, 100);
                daemon_pump(d);
        }
        return 0;
}

/* Lists every tool runs times; the median time, and how many were listed. */
static int time_lists(struct daemon_run *d, unsigned runs, int64_t *p50, unsigned *listed) {
        int64_t took[16];
        int r = 0;

        runs = runs > 16 ? 16 : runs;
        for (unsigned i = 0; i < runs && r >= 0; i++) {
                int64_t t0 = now_ns();
                r = count_listed_tools(d, listed);
                took[i] = now_ns() - t0;
        }
        if (r >= 0) {
                qsort(took, runs, sizeof *took, cmp_i64);
                *p50 = percentile(took, runs, 50);
        }
        return r;
}

static int measure_level(const struct daemon_opts *base, unsigned extra, unsigned runs, struct catalog_level *ret) {
        struct daemon_opts o = *base;
        struct daemon_run d;
        char members[160];
        int r, q;

        snprintf(members, sizeof members,
                 "\"args\": [\"--tools\", \"%u\", \"--page-size\", \"0\"], \"maxCatalogItems\": %u, \"healthInterval\": 0",
                 extra, extra + DEMO_TOOLS);
        o.server = DEMO_SERVER_PATH;
        o.server_members = members;
        *ret = (struct catalog_level){ .tools = extra + DEMO_TOOLS };
        r = daemon_start(&d, &o);
        if (r >= 0)
                r = daemon_wait_status(&d, "1/1 servers ready", CATALOG_TIMEOUT_MS);
        /* Listed once before the figure: the registry is built at the first read. */
        if (r >= 0)
                r = time_lists(&d, runs, &ret->list_p50_ns, &ret->listed);
        ret->rss_ready_kib = r >= 0 ? proc_rss_kib(d.pid) : 0;
        d.saw_unready = false;
        if (r >= 0)
                r = bench_control(&d, "restart", 1);
        if (r >= 0)
                r = wait_ready_again(&d);
        if (r >= 0)
                r = count_listed_tools(&d, &ret->listed);
        ret->rss_restarted_kib = r >= 0 ? proc_rss_kib(d.pid) : 0;
        if (r >= 0 && ret->listed != ret->tools) {
                fprintf(stderr, "mcpvisor-bench: catalog: tools/list shows %u of the server's %u tools\n", ret->listed,
                        ret->tools);
                r = -ENOENT;
        }
        if (r < 0)
                fprintf(stderr, "mcpvisor-bench: catalog (%u tools): %s; last status: %s; log: %s\n", ret->tools,
                        strerror(-r), d.status, d.log);
        q = daemon_stop(&d, 60000);
        ret->ok = r >= 0 && q == 0;
        return r < 0 ? r : q != 0 ? -ECHILD : 0;
}

int measure_catalog(const struct daemon_opts *o, const unsigned *extra, unsigned n, unsigned runs,
                    struct catalog_level *ret) {
        int r = 0;

        for (unsigned k = 0; k < n && r >= 0; k++)
                r = measure_level(o, extra[k], runs, &ret[k]);
        return r;
}
