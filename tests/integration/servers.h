/* A test's config, built up member by member, and its daemon started with it: the
 * "mcpServers" entries (mostly demo servers, see demo/demo-server.c) and the "mcpvisor"
 * settings. One config at a time, for the daemon named by servers_reset(). The names are
 * short: test bodies use them on nearly every line. */
#pragma once

#include "harness.h"

/* printf into one of a few static buffers: for needles and config snippets. */
const char *sf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For a suite's setup, and between daemons: no servers, no settings; start() starts d. */
void servers_reset(struct h_daemon *d);
/* For a suite's fini: stops the daemon, draining NOTIFY datagrams meanwhile (h_cleanup's own
 * stop does not), and expects that it stopped with exit status 0 (see h_cleanup). */
void servers_teardown(void);
/* Appends one "name": {...} member to mcpServers. */
void add_entry(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A demo server entry: keys are more JSON members, args the items of its "args" array
 * (both "" for none). */
void add_demo(const char *name, const char *keys, const char *args);
/* The "mcpvisor" members, as JSON text ("" for none); replaces the ones set before. */
void set_settings(const char *members);
/* The whole config as JSON text, malloc'd. */
char *config_text(void);
/* Writes the config and starts the daemon, with env (NULL-terminated, or NULL) added to its
 * environment. */
void start(const char *const *env);
/* Waits until the daemon says all n servers are ready. */
void wait_all_ready(unsigned n);
