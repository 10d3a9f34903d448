/* mcpvisorctl's text; see ctl-format.h. */
#include "ctl-format.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define SECONDS_PER_DAY 86400.0

char *ctl_format_duration(double seconds, char *buf, size_t size) {
        unsigned long long s;

        if (!(seconds >= 0)) { /* also NaN */
                snprintf(buf, size, "-");
                return buf;
        }
        s = (unsigned long long)seconds; /* whole seconds: an uptime is read at a glance */
        if (s < 60)
                snprintf(buf, size, "%llus", s);
        else if (s < 3600)
                snprintf(buf, size, "%llum%02llus", s / 60, s % 60);
        else if (s < 86400)
                snprintf(buf, size, "%lluh%02llum", s / 3600, s % 3600 / 60);
        else
                snprintf(buf, size, "%llud%02lluh", s / 86400, s % 86400 / 3600);
        return buf;
}

char *ctl_format_timeout(uint64_t usec, char *buf, size_t size) {
        snprintf(buf, size, "%g s", (double)usec / (double)USEC_PER_SEC);
        return buf;
}

int ctl_parse_seconds(const char *s, uint64_t *ret_usec) {
        char *end;
        double v;

        if (!s || !*s || strchr(" \t\n", *s))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (*end || errno == ERANGE || !isfinite(v))
                return errno == ERANGE ? -ERANGE : -EINVAL;
        if (v <= 0 || v > SECONDS_PER_DAY)
                return -ERANGE;
        *ret_usec = (uint64_t)(v * (double)USEC_PER_SEC + 0.5);
        if (*ret_usec == 0)
                *ret_usec = 1; /* a positive number never means "no time at all" */
        return 0;
}

int ctl_table_init(struct ctl_table *t, const char *const *header, size_t n_columns) {
        *t = (struct ctl_table){ .n_columns = n_columns };
        for (size_t i = 0; i < n_columns; i++) {
                int r = ctl_table_add(t, header[i]);
                if (r < 0) {
                        ctl_table_done(t);
                        return r;
                }
        }
        return 0;
}

int ctl_table_note(struct ctl_table *t, const char *text) {
        size_t row = t->n_cells > 0 ? (t->n_cells - 1) / t->n_columns : 0;
        char **notes, *copy;

        if (row >= t->n_notes) {
                notes = realloc(t->notes, (row + 1) * sizeof *notes);
                if (!notes)
                        return -ENOMEM;
                memset(notes + t->n_notes, 0, (row + 1 - t->n_notes) * sizeof *notes);
                t->notes = notes;
                t->n_notes = row + 1;
        }
        copy = strdup(text);
        if (!copy)
                return -ENOMEM;
        free(t->notes[row]);
        t->notes[row] = copy;
        return 0;
}

int ctl_table_add(struct ctl_table *t, const char *text) {
        char **cells = realloc(t->cells, (t->n_cells + 1) * sizeof *cells);
        char *copy;

        if (!cells)
                return -ENOMEM;
        t->cells = cells;
        copy = strdup(text ? text : "-");
        if (!copy)
                return -ENOMEM;
        t->cells[t->n_cells++] = copy;
        return 0;
}

int ctl_table_add_row(struct ctl_table *t, const char *const *cells, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int r = ctl_table_add(t, cells[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

void ctl_table_print(const struct ctl_table *t, FILE *out) {
        size_t widths[32] = { 0 };
        size_t n = t->n_columns < ARRAY_SIZE(widths) ? t->n_columns : ARRAY_SIZE(widths);

        for (size_t i = 0; i < t->n_cells; i++)
                if (i % t->n_columns < n && strlen(t->cells[i]) > widths[i % t->n_columns])
                        widths[i % t->n_columns] = strlen(t->cells[i]);
        for (size_t i = 0; i < t->n_cells; i++) {
                size_t col = i % t->n_columns;
                bool last = col == t->n_columns - 1 || i == t->n_cells - 1;

                if (last || col >= n)
                        fprintf(out, "%s%s", t->cells[i], last ? "\n" : "  ");
                else
                        fprintf(out, "%-*s  ", (int)widths[col], t->cells[i]);
                if (last && i / t->n_columns < t->n_notes && t->notes[i / t->n_columns])
                        fputs(t->notes[i / t->n_columns], out);
        }
}

void ctl_table_done(struct ctl_table *t) {
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        for (size_t i = 0; i < t->n_notes; i++)
                free(t->notes[i]);
        free(t->cells);
        free(t->notes);
        *t = (struct ctl_table){ 0 };
}

/* Text as it is, but control characters (C0, DEL, and C1 as UTF-8) as '?', so that a
 * server's bytes cannot move the cursor or recolour the operator's terminal. */
static void put_text(const char *s, FILE *out) {
        const unsigned char *p = (const unsigned char *)s;

        for (; *p; p++) {
                if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
                        fputc('?', out);
                        p++;
                } else {
                        fputc(*p < 0x20 || *p == 0x7F ? '?' : *p, out);
                }
        }
}

void ctl_format_text(const char *s, FILE *out) {
        put_text(s, out);
}

static void put_why(const struct ctl_server_notes *n, const char *indent, FILE *out) {
        char t[16];

        if (n->state && strcmp(n->state, "starting") == 0) {
                fprintf(out, "%swhy: starting for %s", indent, ctl_format_duration(n->since, t, sizeof t));
                if (n->why) {
                        fputs("; its last run: ", out);
                        put_text(n->why, out);
                }
                fputc('\n', out);
        } else if ((n->cause && *n->cause) || n->why) {
                fprintf(out, "%swhy: ", indent);
                put_text(n->cause && *n->cause ? n->cause : n->why, out);
                fputc('\n', out);
        }
}

static void put_log(const struct ctl_server_notes *n, const char *indent, FILE *out) {
        switch (n->log) {
        case CTL_LOG_JOURNAL:
                if (n->no_stderr) {
                        fprintf(out, "%slog: journalctl MCPVISOR_SERVER=%s (mcpvisord's lines about it; it has no stderr)\n",
                                indent, n->name);
                        break;
                }
                fprintf(out, "%slog: journalctl -t %s (its stderr), journalctl MCPVISOR_SERVER=%s (with mcpvisord's "
                        "lines about it)\n", indent, n->name, n->name);
                break;
        case CTL_LOG_STDERR:
                fprintf(out, "%slog: on mcpvisord's stderr", indent);
                if (n->log_stderr) {
                        fputs(" (", out);
                        put_text(n->log_stderr, out);
                        fputc(')', out);
                }
                fputs(", not in the journal\n", out);
                break;
        case CTL_LOG_UNKNOWN:
                break;
        }
}

void ctl_format_notes(const struct ctl_server_notes *n, const char *indent, FILE *out) {
        char t[16];

        put_why(n, indent, out);
        if (n->stderr_line) {
                fprintf(out, "%sstderr %s ago: ", indent, ctl_format_duration(n->stderr_since, t, sizeof t));
                put_text(n->stderr_line, out);
                fputc('\n', out);
        }
        put_log(n, indent, out);
}
