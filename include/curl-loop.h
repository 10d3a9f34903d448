/* libcurl's multi socket interface driven by the daemon's libevent loop (as curl's
 * hiperfifo example): one per daemon, made when the first server reached by URL starts.
 * curl says which sockets to watch and when its timer is due; the loop tells it what
 * happened, and each finished transfer is reported once, after curl has returned, so a
 * report may add and remove transfers freely. Nothing here calls curl from inside one of
 * curl's own callbacks. */
#pragma once

#include <curl/curl.h>

struct event_base;
struct logger;
struct curl_loop;

/* A transfer ended: result is curl's (CURLE_OK: the response came whole). The handle is
 * no longer in the loop; the callee owns it again. */
typedef void (*curl_loop_done_fn)(CURL *easy, CURLcode result, void *userdata);

/* Loads libcurl (curl-library.c) the first time; -ENOENT with *error (static) when it
 * cannot be loaded. */
int curl_loop_new(struct event_base *base, const struct logger *log, struct curl_loop **ret, const char **error);
/* After every transfer was removed. NULL-safe. */
void curl_loop_free(struct curl_loop *l);

/* Starts easy (its options set); done is called once when it ends, unless it is removed
 * first. 0 or -ENOMEM. Never from inside a curl callback. */
int curl_loop_add(struct curl_loop *l, CURL *easy, curl_loop_done_fn done, void *userdata);
/* Stops a transfer that has not ended: done is not called. Never from inside a curl callback. */
void curl_loop_remove(struct curl_loop *l, CURL *easy);

/* For CURLOPT_OPENSOCKETFUNCTION: the transfer's sockets close-on-exec, as every other
 * descriptor of the daemon (a server spawned meanwhile inherits none). */
curl_socket_t curl_loop_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address);

/* libcurl, loaded once (curl-library.c): 0, or -ENOENT with *error (static). */
int curl_library_load(const char **error);
