/* mcpvisorctl's text: durations, numbers from the command line, aligned tables, and the
 * notes that say why a server is not ready and where to look next. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* An uptime as people read it: "45s", "3m12s", "2h05m", "3d04h"; negative or NaN: "-".
 * Writes into buf (16 bytes are enough) and returns it. */
char *ctl_format_duration(double seconds, char *buf, size_t size);

/* A timeout for a message: "10 s", "1.5 s", "250 ms". Writes into buf (32 bytes are
 * enough) and returns it. */
char *ctl_format_timeout(uint64_t usec, char *buf, size_t size);

/* "SECONDS" of --timeout: a positive decimal number, at most a day. Returns 0 with
 * *ret_usec set, or -EINVAL/-ERANGE and leaves it alone. */
int ctl_parse_seconds(const char *s, uint64_t *ret_usec);

/* A table printed with each column as wide as its widest cell, two spaces apart, the last
 * column not padded; a row may have a note, lines printed as they are under it. Cells and
 * notes are copied. */
struct ctl_table {
        size_t n_columns;
        size_t n_cells;           /* the header row included */
        char **cells;
        char **notes;             /* per row (the header's first), NULL for none */
        size_t n_notes;
};

int ctl_table_init(struct ctl_table *t, const char *const *header, size_t n_columns);
/* Adds one cell; rows fill left to right. -ENOMEM on failure. */
int ctl_table_add(struct ctl_table *t, const char *text);
/* Adds n cells, a row when n is the number of columns. -ENOMEM on failure. */
int ctl_table_add_row(struct ctl_table *t, const char *const *cells, size_t n);
/* Sets the note of the last row begun (text ends in '\n', or is ""). -ENOMEM on failure. */
int ctl_table_note(struct ctl_table *t, const char *text);
void ctl_table_print(const struct ctl_table *t, FILE *out);
void ctl_table_done(struct ctl_table *t);

/* s with its control characters shown as '?' (see ctl_format_notes()). */
void ctl_format_text(const char *s, FILE *out);

/* Where the daemon's log goes, as its status answer says. */
enum ctl_log_target { CTL_LOG_UNKNOWN, CTL_LOG_JOURNAL, CTL_LOG_STDERR };

/* What is known of a server that is not where it should be. */
struct ctl_server_notes {
        const char *name;
        const char *state;
        const char *cause;        /* why it is in its state, as of now; NULL or "" for none */
        const char *why;          /* how its last run ended; NULL for none */
        double since;             /* seconds in its state */
        const char *stderr_line;  /* the last line it wrote to stderr; NULL for none */
        double stderr_since;      /* seconds since then */
        enum ctl_log_target log;
        const char *log_stderr;   /* CTL_LOG_STDERR: what the daemon's stderr is; NULL if unknown */
        bool no_stderr;           /* its runs write none (a server reached by URL): its log is the daemon's lines */
};

/* Prints, each line after indent, what is known: "why: CAUSE" (for a server starting: how
 * long, and how its last run ended), "stderr 3s ago: LINE", and "log: " where to read
 * more: journalctl only when the daemon logs to the journal. Text from the daemon has its
 * control characters shown as '?': a server's stderr is any bytes. */
void ctl_format_notes(const struct ctl_server_notes *n, const char *indent, FILE *out);
