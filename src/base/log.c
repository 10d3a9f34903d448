/* Logging to the journal or stderr; see log.h. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include "log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg",     [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
        [LOG_ERR] = "err",         [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info",       [LOG_DEBUG] = "debug",
};

int log_level_from_string(const char *s) {
        static const struct { const char *alias; int level; } aliases[] = {
                { "error", LOG_ERR }, { "warn", LOG_WARNING }, { "critical", LOG_CRIT },
                { "emergency", LOG_EMERG },
        };
        if (!s || !*s)
                return -EINVAL;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
                return s[0] - '0';
        for (size_t i = 0; i < ARRAY_SIZE(level_names); i++)
                if (strcasecmp(s, level_names[i]) == 0)
                        return (int)i;
        for (size_t i = 0; i < ARRAY_SIZE(aliases); i++)
                if (strcasecmp(s, aliases[i].alias) == 0)
                        return aliases[i].level;
        return -EINVAL;
}

const char *log_level_to_string(int priority) {
        if (priority < 0 || priority >= (int)ARRAY_SIZE(level_names))
                return "unknown";
        return level_names[priority];
}

/* $JOURNAL_STREAM names the device:inode of our stderr when systemd connected it to
 * journald; a parent may have redirected stderr since, so compare with fd 2 itself. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void logger_init(struct logger *lg, int max_priority) {
        *lg = (struct logger){
                .max_priority = max_priority,
                .journal = stderr_is_journal(),
                .identifier = "mcpvisord",
        };
}

static bool is_control(unsigned char c) {
        return c < 0x20 || c == 0x7f;
}

char *log_escape(const char *text) {
        static const char hex[] = "0123456789abcdef";
        size_t n = 0, len = strlen(text);
        char *out, *o;

        for (const char *t = text; *t; t++)
                n += is_control((unsigned char)*t);
        out = malloc(len + 3 * n + 1);
        if (!out)
                return NULL;
        o = out;
        for (const unsigned char *t = (const unsigned char *)text; *t; t++) {
                if (!is_control(*t)) {
                        *o++ = (char)*t;
                        continue;
                }
                *o++ = '\\';
                if (*t == '\n' || *t == '\r' || *t == '\t')
                        *o++ = *t == '\n' ? 'n' : *t == '\r' ? 'r' : 't';
                else {
                        *o++ = 'x';
                        *o++ = hex[*t >> 4];
                        *o++ = hex[*t & 0xf];
                }
        }
        *o = '\0';
        return out;
}

/* Fields beyond these are not sent: no record needs more. */
#define LOG_MAX_FIELDS 12

static void journal_record(int priority, const char *identifier, const struct log_subject *subject,
                           const char *message) {
        char prio[16], ident[256], server[256], client[64];
        _cleanup_free_ char *msg = NULL;
        struct iovec iov[5 + LOG_MAX_FIELDS];
        int n = 0;

        if (asprintf(&msg, "MESSAGE=%s", message) < 0)
                return;
        iov[n++] = (struct iovec){ msg, strlen(msg) };
        snprintf(prio, sizeof prio, "PRIORITY=%d", priority);
        iov[n++] = (struct iovec){ prio, strlen(prio) };
        snprintf(ident, sizeof ident, "SYSLOG_IDENTIFIER=%s", identifier);
        iov[n++] = (struct iovec){ ident, strlen(ident) };
        if (subject && subject->server) {
                snprintf(server, sizeof server, "MCPVISOR_SERVER=%s", subject->server);
                iov[n++] = (struct iovec){ server, strlen(server) };
        }
        if (subject && subject->client) {
                snprintf(client, sizeof client, "MCPVISOR_CLIENT=%" PRIu64, subject->client);
                iov[n++] = (struct iovec){ client, strlen(client) };
        }
        for (size_t i = 0; subject && subject->fields && subject->fields[i] && i < LOG_MAX_FIELDS; i++)
                iov[n++] = (struct iovec){ (void *)subject->fields[i], strlen(subject->fields[i]) };
        (void)sd_journal_sendv(iov, n);
}

/* One record, escaped: see log_escape() in log.h. */
static void write_record(const struct logger *lg, int priority, const char *identifier,
                         const struct log_subject *subject, const char *prefix, const char *text) {
        _cleanup_free_ char *safe = log_escape(text);

        if (!safe)
                return;
        if (lg->journal)
                journal_record(priority, identifier, subject, safe);
        else
                fprintf(stderr, "%s: %s%s\n", identifier, prefix, safe);
}

void log_emit(const struct logger *lg, int priority, const struct log_subject *subject,
              const char *fmt, ...) {
        _cleanup_free_ char *message = NULL;
        va_list ap;

        if (priority > lg->max_priority)
                return;
        va_start(ap, fmt);
        int r = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        log_emit_always(lg, priority, subject, message);
}

void log_emit_always(const struct logger *lg, int priority, const struct log_subject *subject, const char *message) {
        _cleanup_free_ char *line = NULL;
        char level[16];
        int r = 0;

        /* The subject leads the text in the journal too: journalctl -u shows no fields. */
        if (subject && subject->server)
                r = asprintf(&line, "[%s] %s", subject->server, message);
        else if (subject && subject->client)
                r = asprintf(&line, "[client %" PRIu64 "] %s", subject->client, message);
        else
                line = strdup(message);
        if (r < 0) {
                line = NULL; /* undefined after a failure */
                return;
        }
        if (!line)
                return;
        snprintf(level, sizeof level, "%s: ", log_level_to_string(priority));
        write_record(lg, priority, lg->identifier, subject, level, line);
}

void log_server_line(const struct logger *lg, int priority, const char *server, const char *line) {
        if (priority > lg->max_priority)
                return;
        write_record(lg, priority, server, &(struct log_subject){ .server = server }, "", line);
}

char *log_stderr_name(void) {
        char buf[4096];
        ssize_t n = readlink("/proc/self/fd/2", buf, sizeof buf - 1);

        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        return strdup(buf);
}

const char *log_server_hint(const struct logger *lg, const char *server, char *buf, size_t size) {
        if (lg->journal)
                snprintf(buf, size, "journalctl -t %s", server);
        else
                snprintf(buf, size, "mcpvisord's stderr");
        return buf;
}
