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
/* Writes the config and starts the daemon with o (its config the one built). */
void start_with(const struct h_opts *o);
/* start(NULL), the daemon limited to nofile descriptors (RLIMIT_NOFILE). */
void start_nofile(unsigned nofile);
/* start(NULL), with $JOURNAL_STREAM naming the daemon's stderr as systemd does when it is
 * the journal: the daemon sends its records to the journal's socket (see h_fake_journald),
 * and its log file stays empty. */
void start_logging_to_journal(void);
/* Waits until the daemon says all n servers are ready. */
void wait_all_ready(unsigned n);
/* A client of the test's daemon, connected and initialized, declaring no capabilities, or
 * capabilities (JSON text of initialize's params.capabilities). */
struct h_client *cl_open(void);
struct h_client *cl_open_with(const char *capabilities);
/* The commonest start: one demo server called name, ready, and one client connected and
 * initialized, declaring capabilities (JSON text, or NULL for none). */
struct h_client *start_one_demo(const char *name, const char *capabilities);

/* ---- TLS for servers reached by URL (test_remote.c, test_interop.c) ---- */

/* A CA made in dir with the openssl CLI (name.pem, name.key; EC keys: quick to make). */
void make_ca(const char *dir, const char *name);
/* A certificate for 127.0.0.1 and localhost signed by the CA ca of dir: srv.pem, srv.key. */
void make_server_certificate(const char *dir, const char *ca);

/* ---- For fault-injection tests (test_faults.c, test_load.c) ---- */

/* "MCPVISOR_IT_TAG=...", unique to this test process: add_tagged() puts it in its servers'
 * environment, which everything they start inherits, so h_count_processes_with_env() finds
 * them all, wherever they were re-parented. */
const char *tag_entry(void);
/* add_demo, the server's environment tagged (keys must not hold "env"). */
void add_tagged(const char *name, const char *keys, const char *args);
/* Writes the config as it is now into the daemon's config file, for a reload. */
void config_rewrite(void);

/* What the daemon holds once warmed up: compared after each fault. */
struct baseline {
        int fds;                     /* entries of /proc/PID/fd */
        long rss_kb;                 /* VmRSS */
        unsigned procs;              /* tagged processes: servers and what they left running */
};

/* Waits (draining NOTIFY datagrams) until procs tagged processes run and the daemon has no
 * zombie child, then reads its descriptors and RSS. */
struct baseline baseline_take(unsigned procs);
/* Waits until the daemon holds exactly the baseline's descriptors, has no zombie child and
 * the baseline's number of tagged processes runs; then that its RSS grew by no more than a
 * slack (8 MiB; not checked under ASan, see servers.c). Returns the growth in KiB, for the
 * record. */
long baseline_expect(const struct baseline *b);
/* For the end of a test's body: stops the daemon (SIGTERM, draining NOTIFY datagrams),
 * asserts that it exited with status 0 (under ASan: without a leak) and that no tagged
 * process is left. A suite's fini cannot check that: Criterion 2.4 prints a failed assertion
 * of a fini but still counts the test as passed, and exits 0. */
void stop_clean(void);
/* For a suite's fini: servers_teardown() (a no-op after stop_clean(), else the cleanup of a
 * test that failed early), then the same check for tagged processes, printed only. */
void teardown_no_orphans(void);

#define LOAD_MS 30000  /* for a load to finish, on a loaded machine under ASan */
#define FAULT_MS 20000 /* for a fault's effects to show */

/* Starts the daemon with the servers added, waits until all n are ready, and warms up a
 * load of kinds (n_kinds of them) from 3 clients with 4 requests in flight each, 40
 * requests each, so that the baseline taken next counts what serving costs. */
struct h_load *start_loaded(unsigned n, const struct h_call_kind *kinds, size_t n_kinds);
/* Keeps the load going (more requests whenever every client has sent all it had) until
 * needle occurs n times in the daemon's log, within FAULT_MS. */
void load_until_log(struct h_load *l, const char *needle, unsigned n);
