/* Causes of a server's state as facts, and their words; see server-cause.h. */
#include "server-cause.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "macro.h"
#include "process.h"
#include "utf8.h"

void server_cause_set(struct server_cause *c, enum server_cause_kind kind, const char *detail) {
        server_cause_done(c);
        *c = (struct server_cause){ .kind = kind };
        /* Whole: the daemon's words are never cut, and what a server wrote into them was
         * bounded where it was read (a handshake's error, a line's head). */
        if (detail && *detail) {
                c->detail = strdup(detail);
                if (c->detail)
                        utf8_mend(c->detail);
        }
}

void server_cause_done(struct server_cause *c) {
        free(c->detail);
        c->detail = NULL;
        server_exit_done(&c->exit);
}

void server_exit_set_reason(struct server_exit *e, const char *reason) {
        free(e->reason);
        e->reason = reason && *reason ? strdup(reason) : NULL;
        if (e->reason)
                utf8_mend(e->reason);
}

void server_exit_copy(struct server_exit *dst, const struct server_exit *src) {
        if (dst == src)
                return;
        server_exit_done(dst);
        *dst = *src;
        dst->reason = NULL;
        server_exit_set_reason(dst, src->reason);
}

void server_exit_done(struct server_exit *e) {
        free(e->reason);
        *e = (struct server_exit){ 0 };
}

const char *server_cause_kind_name(const struct server_cause *c) {
        static const char *const names[SERVER_CAUSE_KIND_COUNT] = {
                [SERVER_CAUSE_REQUEST] = "request",         [SERVER_CAUSE_SPAWN] = "spawn",
                [SERVER_CAUSE_EXIT] = "exit",               [SERVER_CAUSE_CONNECTION] = "connection",
                [SERVER_CAUSE_HANDSHAKE] = "handshake",     [SERVER_CAUSE_START_TIMEOUT] = "startTimeout",
                [SERVER_CAUSE_HEALTH] = "health",           [SERVER_CAUSE_PROTOCOL] = "protocol",
        };

        if (c->kind == SERVER_CAUSE_EXIT && (c->exit.code == CLD_KILLED || c->exit.code == CLD_DUMPED))
                return "signal";
        return names[c->kind];
}

bool server_exit_by_daemon(const struct server_exit *e) {
        return e->code == CLD_KILLED && e->signal_sent != 0 &&
               (e->status == SIGTERM || (e->status == SIGKILL && e->signal_sent == SIGKILL));
}

/* The launcher's reason when it gave one, else the code and status. */
static const char *describe(const struct server_exit *e, char *buf, size_t size) {
        if (e->reason)
                return e->reason;
        return process_describe_exit(e->code, e->status, buf, size);
}

char *server_exit_text(const struct server_exit *e) {
        char plain[128], *text = NULL;
        int r;

        if (e->code == 0 && e->reason)
                /* no process, but the launcher says what follows (a remote server's sign-in) */
                r = asprintf(&text, "%s", e->reason);
        else if (e->code == 0)
                r = asprintf(&text, "%s", "");
        else if (server_exit_by_daemon(e) && e->status == SIGTERM)
                r = asprintf(&text, "stopped with SIGTERM after stopTimeout (%g s)", e->stop_timeout);
        else if (server_exit_by_daemon(e))
                r = asprintf(&text, "stopped with SIGKILL after stopTimeout (%g s) and killTimeout (%g s)",
                             e->stop_timeout, e->kill_timeout);
        else if (e->signal_sent == SIGTERM)
                r = asprintf(&text, "%s after SIGTERM at stopTimeout (%g s)", describe(e, plain, sizeof plain),
                             e->stop_timeout);
        else if (e->signal_sent == SIGKILL)
                r = asprintf(&text, "%s after SIGKILL at killTimeout (%g s)", describe(e, plain, sizeof plain),
                             e->kill_timeout);
        else
                r = asprintf(&text, "%s", describe(e, plain, sizeof plain));
        return r < 0 ? NULL : text;
}

bool server_exit_clean(const struct server_exit *e) {
        return e->code == CLD_EXITED && e->status == 0;
}

/* What began the end, before the exit that followed. */
static char *reason_text(const struct server_cause *c) {
        const char *detail = c->detail ? c->detail : "";
        char *text = NULL;
        int r;

        switch (c->kind) {
        case SERVER_CAUSE_SPAWN:
                r = asprintf(&text, "cannot start: %s", c->detail ? c->detail : strerror(c->error));
                break;
        case SERVER_CAUSE_EXIT:
                r = asprintf(&text, "%s", "");
                break;
        case SERVER_CAUSE_START_TIMEOUT:
                r = asprintf(&text, "startTimeout (%g s) passed before it was ready", c->timeout);
                break;
        case SERVER_CAUSE_HEALTH:
                r = asprintf(&text, "%u health check%s failed in a row: %s", c->failures, c->failures == 1 ? "" : "s",
                             detail);
                break;
        default:
                r = asprintf(&text, "%s", detail);
                break;
        }
        return r < 0 ? NULL : text;
}

char *server_cause_text(const struct server_cause *c) {
        _cleanup_free_ char *reason = reason_text(c), *end = server_exit_text(&c->exit);
        char *text = NULL;
        int r;

        if (!reason || !end)
                return NULL;
        /* An operator's stop is the whole story: how the process went follows from it. */
        if (!*end || c->kind == SERVER_CAUSE_REQUEST || c->kind == SERVER_CAUSE_SPAWN)
                return TAKE_PTR(reason);
        if (!*reason)
                r = asprintf(&text, "%s%s", end, c->starting ? " before it was ready" : "");
        else
                r = asprintf(&text, "%s, then %s", reason, end);
        return r < 0 ? NULL : text;
}

const char *server_cause_brief(const struct server_cause *c, char *buf, size_t size) {
        switch (c->kind) {
        case SERVER_CAUSE_SPAWN:
                return "cannot start";
        case SERVER_CAUSE_START_TIMEOUT:
                return "startTimeout passed";
        case SERVER_CAUSE_HANDSHAKE:
                return "handshake failed";
        case SERVER_CAUSE_HEALTH:
                return "health checks failed";
        case SERVER_CAUSE_EXIT:
        case SERVER_CAUSE_CONNECTION:
                if (c->exit.code) {
                        _cleanup_free_ char *end = server_exit_text(&c->exit);
                        snprintf(buf, size, "%s", end ? end : "");
                        return buf;
                }
                break;
        default:
                break;
        }
        snprintf(buf, size, "%s", c->detail ? c->detail : "");
        return buf;
}
