/* The daemon's "status" answer: for the status command and for the commands that wait until
 * a server settles. */
#pragma once

#include <json-c/json.h>
#include <stdint.h>

#include "ctl-connection.h"
#include "ctl-format.h"

/* Asks for the status. Returns 0 with *ret_status (owned), or a negative errno after
 * printing why (the daemon's own error as "mcpvisorctl: MESSAGE"). */
int ctl_status_fetch(struct ctl_conn *c, uint64_t timeout_usec, json_object **ret_status);

/* The entry of status.servers named name (borrowed), or NULL. */
json_object *ctl_status_server(json_object *status, const char *name);

/* What the status answer says of server s (an entry of status.servers): why it is in its
 * state, its last stderr line, where the logs are. Strings are borrowed from status. */
void ctl_status_notes(json_object *status, json_object *s, struct ctl_server_notes *ret);
/* Prints them as lines indented under the server's row (ctl_format_notes). */
void ctl_status_print_notes(json_object *status, json_object *s, FILE *out);

/* Prints "mcpvisorctl: unknown server 'NAME'; configured: a, b", as the daemon words it. */
void ctl_status_print_unknown(json_object *status, const char *name);

/* Member key of o as a string, an integer or a number; NULL/def when missing, null or of
 * another type. */
const char *ctl_json_str(json_object *o, const char *key);
int64_t ctl_json_int(json_object *o, const char *key, int64_t def);
/* A table cell for a whole number at key in o, written in buf: "-" when absent or negative. */
const char *ctl_json_int_cell(json_object *o, const char *key, char *buf, size_t size);
double ctl_json_double(json_object *o, const char *key, double def);
