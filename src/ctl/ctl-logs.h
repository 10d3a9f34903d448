/* A server's last lines as the daemon keeps them: for logs NAME and status NAME. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "ctl-connection.h"

/* Prints the kept lines of server name, each after indent, under a heading that names it
 * (nothing when there are none). A negative errno after printing why the daemon did not give them. */
int ctl_logs_print_kept(struct ctl_conn *c, const char *name, uint64_t timeout, const char *indent, FILE *out);
