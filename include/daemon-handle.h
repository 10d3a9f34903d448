/* The daemon as a module holds it: a handle. struct daemon is only declared here; its
 * definition (daemon.h), with the headers of every part it holds, is for the files that
 * own its fields or walk several of its parts (daemon.c, reload.c, the clients' lists, the
 * status answer). A module that uses one or two of the daemon's parts asks for them here
 * and includes only their headers, as an nginx module asks the cycle for its own
 * configuration instead of reading the cycle. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

struct client;
struct config;
struct daemon;
struct event_base;
struct jsonrpc_parser;
struct list_changes;
struct list_waits;
struct logger;
struct registry;
struct router;
struct server_requests;
struct subscriptions;
struct supervisor;

/* The parts, each owned by the daemon for its whole life. */
struct event_base *daemon_event_base(struct daemon *d);          /* the loop */
struct jsonrpc_parser *daemon_parser(struct daemon *d);          /* one tokener for every line read */
const struct config *daemon_config(const struct daemon *d);      /* the settings in force */
struct logger *daemon_logger(struct daemon *d);
struct supervisor *daemon_supervisor(struct daemon *d);
struct registry *daemon_registry(struct daemon *d);              /* the ready servers' items */
struct router *daemon_router(struct daemon *d);                  /* requests in flight to servers */
struct server_requests *daemon_server_requests(struct daemon *d); /* servers' requests to clients */
struct mrtr *daemon_mrtr(struct daemon *d);                       /* input_required rounds */
struct subscriptions *daemon_subscriptions(struct daemon *d);    /* resources clients subscribed to */
struct list_waits *daemon_list_waits(struct daemon *d);          /* requests held for first starts */
struct list_changes *daemon_list_changes(struct daemon *d);      /* list_changed waiting for its window */

/* Begins a clean stop (idempotent); a second call while stopping exits at once. */
void daemon_stop(struct daemon *d, const char *why);

/* The log level in force: --log-level, else the file's logLevel, else info. */
int daemon_log_level(const struct daemon *d);

/* Sends a notification (params consumed, may be NULL) to every initialized MCP client, or
 * to those of them wants (may be NULL) says yes to; returns to how many. A yes is sent at
 * once: wants may record that in the client. */
unsigned daemon_broadcast_to(struct daemon *d, const char *method, json_object *params,
                             bool (*wants)(struct client *c, void *arg), void *arg);
/* The same, each message sent as belonging to the client's request related says (NULL: to
 * none; client_send_related()). */
unsigned daemon_broadcast_related(struct daemon *d, const char *method, json_object *params,
                                  bool (*wants)(struct client *c, void *arg),
                                  json_object *(*related)(struct client *c, void *arg), void *arg);

/* A client stopped reading (client_drain()): the daemon tells the modules that wait on
 * something from it (the server requests it was asked) that no more will come. */
void daemon_client_draining(struct daemon *d, struct client *c);

/* Called when client counts or server states change: STATUS= is sent once at the end of
 * the loop iteration, however many clients changed in it. */
void daemon_clients_changed(struct daemon *d);
