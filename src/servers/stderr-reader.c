/* Forwarding a server's stderr to the log; see stderr-reader.h. */
#include "stderr-reader.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "time-util.h"
#include "utf8.h"

/* "<3>text" sets the priority, as in sd-daemon(3) and the journal's stdout streams. */
static int line_priority(const char **line) {
        const char *s = *line;

        if (s[0] == '<' && s[1] >= '0' && s[1] <= '7' && s[2] == '>') {
                *line = s + 3;
                return s[1] - '0';
        }
        return LOG_INFO;
}

static void report_dropped(struct stderr_reader *r, uint64_t dropped) {
        if (dropped == 0)
                return;
        log_emit(r->log, LOG_WARNING, &(struct log_subject){ .server = r->name },
                 "server wrote too fast to its stderr: %" PRIu64 " lines dropped (limit %d lines per %llu s)", dropped,
                 STDERR_RATE_BURST, STDERR_RATE_INTERVAL_USEC / USEC_PER_SEC);
}

static bool admit(struct stderr_reader *r) {
        uint64_t told;
        bool admitted = rate_limit_admit(&r->rate, now_usec(), &told);

        report_dropped(r, told);
        return admitted;
}

/* Keeps text as the last line unless it is blank; see stderr-reader.h. */
static void keep_last(struct stderr_reader *r, const char *text) {
        static const char ellipsis[] = "\xe2\x80\xa6";
        size_t len = strlen(text), room = sizeof r->last - 1;

        if (text[strspn(text, " \t")] == '\0')
                return;
        if (len > room)
                len = room - (sizeof ellipsis - 1);
        memcpy(r->last, text, len);
        r->last[len] = '\0';
        utf8_mend(r->last); /* also drops a character the cut split */
        if (text[len] != '\0')
                strcat(r->last, ellipsis);
        r->last_at = now_usec();
}

static void emit_line(struct stderr_reader *r, char *line, size_t len, bool cut) {
        const char *text = line;
        int priority;

        line[len] = '\0';
        if (len > 0 && line[len - 1] == '\r')
                line[--len] = '\0';
        priority = line_priority(&text);
        keep_last(r, text);
        if (r->keep)
                (void)line_ring_add(r->keep, text, realtime_usec()); /* out of memory: one line fewer */
        if (!admit(r))
                return;
        if (cut) {
                char marked[STDERR_LINE_MAX + 32];
                snprintf(marked, sizeof marked, "%s [line cut at %d bytes]", text, STDERR_LINE_MAX);
                log_server_line(r->log, priority, r->name, marked);
        } else {
                log_server_line(r->log, priority, r->name, text);
        }
}

/* Takes whole lines; a line longer than the limit is logged cut and its rest skipped.
 * at_eof: an unterminated tail is a line too. */
static void process(struct stderr_reader *r, struct evbuffer *in, bool at_eof) {
        char line[STDERR_LINE_MAX + 1];

        for (;;) {
                size_t avail = evbuffer_get_length(in);
                struct evbuffer_ptr nl = evbuffer_search(in, "\n", 1, NULL);
                size_t len = nl.pos >= 0 ? (size_t)nl.pos : avail;

                if (nl.pos < 0 && avail <= STDERR_LINE_MAX && !(at_eof && avail > 0))
                        return;
                if (len > STDERR_LINE_MAX) {
                        /* Too long: log what fits (once) and skip to the newline. */
                        if (!r->discarding) {
                                evbuffer_copyout(in, line, STDERR_LINE_MAX);
                                emit_line(r, line, STDERR_LINE_MAX, true);
                        }
                        r->discarding = nl.pos < 0;
                        evbuffer_drain(in, nl.pos >= 0 ? len + 1 : avail);
                        continue;
                }
                evbuffer_remove(in, line, len);
                if (nl.pos >= 0)
                        evbuffer_drain(in, 1);
                if (!r->discarding)
                        emit_line(r, line, len, false);
                r->discarding = false;
                if (nl.pos < 0)
                        return;
        }
}

static void on_read(struct bufferevent *bev, void *userdata) {
        process(userdata, bufferevent_get_input(bev), false);
}

static void on_event(struct bufferevent *bev, short what, void *userdata) {
        struct stderr_reader *r = userdata;

        /* EOF: the server (and whatever inherited its stderr) closed it. */
        process(r, bufferevent_get_input(bev), true);
        bufferevent_disable(bev, EV_READ);
}

int stderr_reader_start(struct stderr_reader *r, struct event_base *base, int fd, const char *name,
                        const struct logger *log, struct line_ring *keep) {
        *r = (struct stderr_reader){ .log = log, .name = name, .keep = keep };
        rate_limit_init(&r->rate, STDERR_RATE_INTERVAL_USEC, STDERR_RATE_BURST, now_usec());
        r->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!r->bev) {
                close(fd);
                return -ENOMEM;
        }
        bufferevent_setcb(r->bev, on_read, NULL, on_event, r);
        bufferevent_enable(r->bev, EV_READ);
        return 0;
}

void stderr_reader_finish(struct stderr_reader *r) {
        struct evbuffer *rest;
        int fd;

        if (!r->bev)
                return;
        /* The bufferevent's input only takes what the bufferevent itself reads, so collect
         * what it holds and what is still in the pipe into a buffer of our own. Whatever
         * the server wrote before exiting is in the pipe already. A process it left behind
         * may hold the pipe open, so read only what is there, and bounded. */
        rest = evbuffer_new();
        fd = bufferevent_getfd(r->bev);
        if (rest) {
                evbuffer_add_buffer(rest, bufferevent_get_input(r->bev));
                for (int i = 0; fd >= 0 && i < 64; i++)
                        if (evbuffer_read(rest, fd, 65536) <= 0)
                                break;
                process(r, rest, true);
                evbuffer_free(rest);
        }
        report_dropped(r, rate_limit_take_dropped(&r->rate));
        bufferevent_free(r->bev);
        r->bev = NULL;
}
