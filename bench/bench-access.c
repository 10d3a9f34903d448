/* Access rules at scale (issue 15): the settings of 50 rules, and a check that the daemon's
 * registry holds the bench server's many tools. bench-main.c measures the daemon with and
 * without them, alternating, with measure_load and measure_idle. */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIST_TIMEOUT_NS (30 * (int64_t)1000000000)

/* Ids nobody has on a test host: below UINT32_MAX - 1, the largest the daemon takes. */
#define FAR_ID 4000000000u

char *access_settings(unsigned rules) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        fprintf(f, "\"access\": {\"default\": \"deny\", \"rules\": [");
        /* None of these match us, and each kind costs the daemon something else: a user, a
         * group, or globs tried on every tool's name. */
        for (unsigned k = 0; k + 1 < rules; k++)
                if (k % 3 == 0)
                        fprintf(f, "{\"users\": [%u], \"tools\": [\"" BENCH_TOOL_PREFIX "t0%u*\"], \"action\": \"deny\"}, ",
                                FAR_ID + k, k % 10);
                else if (k % 3 == 1)
                        fprintf(f, "{\"groups\": [%u], \"servers\": [\"" BENCH_SERVER_NAME "\"], \"action\": \"deny\"}, ",
                                FAR_ID + k);
                else
                        fprintf(f, "{\"tools\": [\"other%02u__*\", \"*__x%02u\"], \"action\": \"deny\"}, ", k, k);
        /* The one that lets us in: the default denies. */
        fprintf(f, "{\"users\": [%u], \"action\": \"allow\"}]}", (unsigned)getuid());
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

static unsigned count(struct line l, const char *needle) {
        unsigned n = 0;
        size_t len = strlen(needle);

        for (const char *p = l.p, *end = l.p + l.len; (p = memmem(p, (size_t)(end - p), needle, len)); p += len)
                n++;
        return n;
}

/* One page of tools/list after cursor (NULL: the first); the next cursor into next, or "". */
static int list_page(struct conn *c, struct daemon_run *d, const char *cursor, char *next, size_t size,
                     unsigned *tools) {
        char text[256];
        uint64_t id = c->next_id++;
        struct line l;
        const char *p;
        int r, n = snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"tools/list\"%s%s%s}\n",
                            id, cursor ? ",\"params\":{\"cursor\":\"" : "", cursor ? cursor : "", cursor ? "\"}" : "");

        if ((r = conn_write(c, text, (size_t)n)) < 0 || (r = conn_read_line(c, d, now_ns() + LIST_TIMEOUT_NS, &l)) < 0)
                return r;
        if (!line_is_result(l, id))
                return -EPROTO;
        *tools += count(l, "\"name\":\"" BENCH_TOOL_PREFIX);
        next[0] = '\0';
        p = memmem(l.p, l.len, "\"nextCursor\":\"", 14);
        if (p)
                snprintf(next, size, "%.*s", (int)strcspn(p + 14, "\""), p + 14);
        return 0;
}

int count_listed_tools(struct daemon_run *d, unsigned *ret) {
        char cursor[256] = "", next[256];
        struct conn c;
        int r = conn_unix(&c, d->sock);

        *ret = 0;
        if (r >= 0)
                r = conn_initialize(&c, d, now_ns() + LIST_TIMEOUT_NS);
        for (bool first = true; r >= 0 && (first || cursor[0]); first = false) {
                r = list_page(&c, d, first ? NULL : cursor, next, sizeof next, ret);
                memcpy(cursor, next, sizeof cursor);
        }
        conn_close(&c);
        return r;
}
