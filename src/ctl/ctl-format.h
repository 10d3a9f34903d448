/* mcpvisorctl's text: durations, numbers from the command line, and aligned tables. */
#pragma once

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
 * column not padded. Cells are copied. */
struct ctl_table {
        size_t n_columns;
        size_t n_cells;           /* the header row included */
        char **cells;
};

int ctl_table_init(struct ctl_table *t, const char *const *header, size_t n_columns);
/* Adds one cell; rows fill left to right. -ENOMEM on failure. */
int ctl_table_add(struct ctl_table *t, const char *text);
void ctl_table_print(const struct ctl_table *t, FILE *out);
void ctl_table_done(struct ctl_table *t);
