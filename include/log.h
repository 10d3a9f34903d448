/* Logging: native journal records when stderr is the journal, readable lines otherwise.
 * A logger lives in the daemon context; nothing here is global. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include "macro.h"

struct logger {
        int max_priority;      /* LOG_ERR ... LOG_DEBUG: records above are dropped */
        bool journal;          /* stderr is connected to journald ($JOURNAL_STREAM matches) */
        const char *identifier; /* SYSLOG_IDENTIFIER of the daemon's own records */
};

void logger_init(struct logger *lg, int max_priority);

/* Parse "err", "warning", "info", "debug", ... or a number 0-7; -EINVAL if unknown. */
int log_level_from_string(const char *s);
const char *log_level_to_string(int priority);

/* Who a record is about; either may be absent. */
struct log_subject {
        const char *server;    /* MCPVISOR_SERVER= */
        uint64_t client;       /* MCPVISOR_CLIENT=, 0 = none */
        const char *const *fields; /* more journal fields, "KEY=value", NULL-terminated; or NULL */
};

void log_emit(const struct logger *lg, int priority, const struct log_subject *subject,
              const char *fmt, ...) _printf_(4, 5);

/* text with its control characters (below 0x20, and 0x7f) written as \n, \r, \t or \xNN,
 * so that one record is one line: a peer's text (a clientInfo.name, a server's stderr
 * line) could otherwise start a line that looks like the daemon's own, or drive the
 * reader's terminal. Every record, of the journal too, is written through it; other
 * bytes, UTF-8 and backslashes among them, pass as they are. Malloc'd; NULL on ENOMEM. */
char *log_escape(const char *text);

/* A record written whatever the log level: one its own setting asked for (the audit). */
void log_emit_always(const struct logger *lg, int priority, const struct log_subject *subject, const char *message);

/* A line a downstream server wrote: recorded under the server's own identity. */
void log_server_line(const struct logger *lg, int priority, const char *server, const char *line);

/* Where a server's stderr lines can be read, for the messages that point there:
 * "journalctl -t NAME" when the daemon logs to the journal, else "mcpvisord's stderr"
 * (journalctl would show nothing). Writes into buf and returns it. */
const char *log_server_hint(const struct logger *lg, const char *server, char *buf, size_t size);

/* What the daemon's stderr is, for telling an operator where its lines went: a file's
 * path, "/dev/pts/3", "pipe:[1234]". Malloc'd; NULL when it cannot be told. */
char *log_stderr_name(void);

#define log_error(lg, ...) log_emit(lg, LOG_ERR, NULL, __VA_ARGS__)
#define log_warning(lg, ...) log_emit(lg, LOG_WARNING, NULL, __VA_ARGS__)
#define log_notice(lg, ...) log_emit(lg, LOG_NOTICE, NULL, __VA_ARGS__)
#define log_info(lg, ...) log_emit(lg, LOG_INFO, NULL, __VA_ARGS__)
#define log_debug(lg, ...) log_emit(lg, LOG_DEBUG, NULL, __VA_ARGS__)
