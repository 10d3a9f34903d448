/* A server played by the test on the far ends of its stdin and stdout pipes, for the
 * tests of a child connection (server-conn.c) and what runs over it. It reads what the daemon
 * sends on the loop of unit-helpers.h, which server_connect starts; one per test. */
#pragma once

#include <event2/buffer.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server-conn.h"
#include "jsonrpc.h"
#include "log.h"

/* Starts the loop and the server and connects to it as the daemon does, with pipes as
 * instance.c makes them: the child connection "srv" that the test drives. */
struct child *server_connect(const struct logger *lg, struct jsonrpc_parser *parser, size_t max_line,
                             const struct child_ops *ops, void *userdata);
/* Plays the server on the ends of a run another module made (instance.c's pipes, handed
 * to a test's launcher), read on base: in is its stdin's read end, out its stdout's
 * write end, both taken. The ends of an earlier server are closed, as its process would
 * close them at its exit. */
void server_adopt(struct event_base *base, int in, int out);
/* Closes the server's ends and stops the loop; after child_free. */
void server_stop(void);

void server_says(const char *s);
void server_answers(int64_t id, const char *result_json);
void server_closes_stdout(void);
/* Closes its stdin without reading it: the daemon's writes fail from then on. */
void server_stops_reading(void);

/* Stops or resumes reading its stdin, keeping it open: what the daemon sends waits. */
void server_pauses_reading(bool paused);

/* What the daemon sent that server_reads has not taken. */
struct evbuffer *server_received(void);
/* The daemon closed the server's stdin. */
bool server_saw_eof(void);
bool server_has_line(void);
/* The next message the daemon sent, waited for (the caller puts it). */
json_object *server_reads(void);

/* m's member key if it is a string, else NULL. */
const char *str_field(json_object *m, const char *key);
