/* Integration-test harness: runs the built mcpvisord for real (directly or under
 * systemd-socket-activate), owns its NOTIFY_SOCKET, and talks to it over its sockets
 * with deadlines instead of sleeps. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc-stats.h"

/* How long a test waits for what must come (it goes on as soon as it has come). Under
 * ASan the daemon and the demo servers run several times slower, and CI runs that pass
 * after the plain one: the same waits, with the margin a slower build needs. */
#ifdef __SANITIZE_ADDRESS__
#define H_TIMEOUT_MS 15000
#else
#define H_TIMEOUT_MS 5000
#endif

struct h_opts {
        const char *config;          /* JSON text written to <dir>/mcpvisor.json; NULL: {} */
        bool activate;               /* run under systemd-socket-activate */
        const char *fdnames;         /* --fdname= value for activation; NULL: unnamed */
        bool activate_control;       /* also pass a control socket (second -l) */
        const char *activate_http;   /* also pass this address (-l, after the others): the HTTP front door's */
        unsigned long watchdog_usec; /* WATCHDOG_USEC for the daemon; 0: none */
        const char *const *extra_args; /* more daemon arguments, NULL-terminated */
        const char *const *env;      /* more NAME=value for the daemon's environment, NULL-terminated */
        unsigned nofile;             /* RLIMIT_NOFILE of the daemon, soft and hard (prlimit); 0: ours */
        bool control_beside;         /* pass --socket only: the daemon puts its control socket
                                      * beside it (d->control is where it should be) */
        bool journal_stream;         /* set JOURNAL_STREAM to the log file's dev:ino, as systemd
                                      * does when stderr is the journal */
};

struct h_daemon {
        pid_t pid;
        char dir[256];
        char config[300];
        char sock[300];
        char control[300];
        char log[300];               /* the daemon's stderr */
        int notify_fd;
        char notify_path[300];
        char notices[65536];         /* every NOTIFY datagram received, '\n'-separated, '|' between */
        size_t notices_len;
        pid_t notify_sender;         /* SCM_CREDENTIALS pid of the last datagram */
        int exit_status;             /* from h_stop/h_wait_exit */
};

/* Creates a private directory, writes the config, starts the daemon. Asserts on failure.
 * MCPVISOR_IT_WRAPPER, if set, is a command line (split at blanks, no quoting) put before the
 * daemon's, after systemd-socket-activate if any: "valgrind --error-exitcode=99 ..." runs
 * every daemon under memcheck with the same pid (scripts/valgrind). */
void h_start(struct h_daemon *d, const struct h_opts *o);
/* Sends sig and waits for exit; returns the wait status (or -1 on timeout, after SIGKILL). */
int h_stop(struct h_daemon *d, int sig, int timeout_ms);
/* Waits for the process to exit on its own. Returns wait status or -1 on timeout. */
int h_wait_exit(struct h_daemon *d, int timeout_ms);
/* Stops the daemon (SIGTERM, then SIGKILL after the timeout) and removes the directory.
 * Returns true if the daemon had exited, or now exited, with status 0: a test's fini
 * checks it, so every test also proves a clean stop (and, under ASan, no leak). Safe to
 * call twice. */
bool h_cleanup(struct h_daemon *d);

/* Waits until a NOTIFY datagram containing needle has arrived. */
bool h_notify_wait(struct h_daemon *d, const char *needle, int timeout_ms);
/* Counts occurrences of needle among the datagrams received so far (after draining). */
unsigned h_notify_count(struct h_daemon *d, const char *needle);

/* True once the daemon's stderr log contains needle. */
bool h_log_wait(struct h_daemon *d, const char *needle, int timeout_ms);
/* Prints the daemon log when H_VERBOSE is set (Criterion cannot tell a fini whether the
 * test failed). */
void h_log_dump_if_verbose(struct h_daemon *d);

struct h_conn {
        int fd;
        char *buf;
        size_t len, cap;
        pid_t as_pid;         /* h_connect_as(): the child that connected, alive until h_close */
        int as_fd;            /* our end of its socketpair; 0 or -1: none */
};

/* Connects, retrying until the deadline (the socket may not exist yet). */
struct h_conn *h_connect(const char *path, int timeout_ms);
/* Connects as another user (the test runs as root): a forked child takes uid, gid and
 * groups (setgroups, setresgid, setresuid), names itself comm (NULL: unchanged), connects,
 * and passes the connected descriptor back over a socketpair (SCM_RIGHTS). The kernel takes
 * SO_PEERCRED and SO_PEERGROUPS at connect(), so the daemon sees the child's identity on the
 * descriptor the test now holds. The child waits until h_close(), so its pid and /proc entry
 * stay valid. The socket must let uid connect: socketMode "0666" (or a group of its), and
 * the daemon's directory is opened to others for search (0711) here. Asserts on failure,
 * except that a refused connect returns NULL. */
struct h_conn *h_connect_as(const char *path, uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
                            const char *comm);
void h_close(struct h_conn *c);
void h_send(struct h_conn *c, const char *text);        /* text sent as is */
void h_sendf(struct h_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For a test that polls many connections itself: the next line already read (without
 * '\n'), malloc'd, or NULL without reading; and a read of what c has now, once poll() says
 * it is readable: false on EOF or error. */
char *h_conn_take_line(struct h_conn *c);
bool h_conn_fill_now(struct h_conn *c);
/* Next line (without '\n'), malloc'd; NULL on EOF or timeout. */
char *h_recv_line(struct h_conn *c, int timeout_ms);
/* Next line parsed as JSON; fails the test on timeout, EOF or bad JSON. */
json_object *h_recv(struct h_conn *c, int timeout_ms);
/* Sends one line and returns the next message received. */
json_object *h_call(struct h_conn *c, const char *line);
/* True if the peer closes (EOF or reset) before the deadline; lines received meanwhile are
 * counted into *lines if not NULL. */
bool h_wait_eof(struct h_conn *c, int timeout_ms, size_t *lines);
/* Sends one request line and asserts that its answer is a result, not an error. */
void h_expect_result(struct h_conn *c, const char *line);
/* initialize + notifications/initialized; asserts the answer. */
void h_initialize(struct h_conn *c);

/* Accessors for assertions. */
json_object *h_get(json_object *o, const char *dotted_path);
int h_error_code(json_object *msg);   /* 0 if no error */
const char *h_str(json_object *o, const char *dotted_path);

/* Path of the built daemon. */
const char *h_daemon_path(void);
/* Runs the daemon with args and only env (NULL-terminated, or NULL for none) until it
 * exits, its stdout and stderr into out; returns its exit status, 128 when killed. */
int h_run_daemon(const char *const *args, char *const *env, char *out, size_t outlen);
/* Path of the built mcpvisor-demo-server (demo/demo-server.c), the server that misbehaves
 * on command. */
const char *h_demo_server_path(void);
long long h_now_ms(void);

/* ---- Helpers for supervision tests: the daemon's log, pidfiles and /proc ---- */

/* The daemon's stderr log so far, malloc'd ("" if none). */
char *h_log_text(struct h_daemon *d);
/* Occurrences of needle in the daemon's log so far. */
unsigned h_log_count(struct h_daemon *d, const char *needle);
/* Waits until needle occurs at least n times in the log, draining NOTIFY datagrams meanwhile. */
bool h_log_count_wait(struct h_daemon *d, const char *needle, unsigned n, int timeout_ms);
/* The rest of the first log line that holds needle, malloc'd, waiting for one as
 * h_log_count_wait does; NULL at the deadline. */
char *h_log_rest_wait(struct h_daemon *d, const char *needle, int timeout_ms);
/* Waits until PATH holds a pid other than not_this (0: any); returns it, or 0 on timeout.
 * The demo server writes pidfiles by rename, so a read never sees half a pid. */
pid_t h_pidfile_wait(const char *path, pid_t not_this, int timeout_ms);
/* True once pid has ended: no such process, or a zombie (ended, its parent not yet reaped it;
 * after re-parenting that parent may not be ours to watch). */
bool h_pid_gone(pid_t pid);
bool h_pid_gone_wait(pid_t pid, int timeout_ms);
/* Field values from /proc/PID/stat: state letter, parent and process group; false if gone. */
bool h_proc_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgid);
/* Children of ppid, all of them or only the zombies among them. */
unsigned h_count_children(pid_t ppid, bool zombies_only);
/* /proc/PID/environ into buf ('\0'-separated entries); its length, 0 if unreadable. */
size_t h_read_environ(pid_t pid, char *buf, size_t size);
/* True if an entry of env (as read by h_read_environ) equals text (exact) or starts with it. */
bool h_environ_has(const char *env, size_t len, const char *text, bool exact);
/* Live processes whose environment says MCPVISOR_SERVER=server and has MCPVISOR_INSTANCE=. */
unsigned h_count_server_processes(const char *server);
/* rm -r. */
void h_remove_tree(const char *dir);
/* Stands in for journald: binds /run/systemd/journal/socket in a private mount namespace
 * of this test process (Criterion runs each test in its own, so the namespace ends with
 * the test). Returns the socket, whose datagrams are the records sent; skips the test
 * without root or mount namespaces. */
int h_fake_journald(void);

/* Reads the NOTIFY datagrams that arrived meanwhile into d->notices. The daemon's sd_notify()
 * blocks once the socket's queue is full (net.unix.max_dgram_qlen, 10 by default without
 * systemd's sysctl), freezing its whole loop: a test that waits on anything else while the
 * daemon changes state often must keep draining. h_log_count_wait does. */
void h_notify_drain(struct h_daemon *d);
/* h_stop, draining NOTIFY datagrams while it waits (a stop sends several STATUS= lines). */
int h_stop_draining(struct h_daemon *d, int sig, int timeout_ms);

/* ---- Helpers for routing tests ---- */

/* h_recv_line, draining d's NOTIFY datagrams while it waits (see h_notify_drain): a test
 * that waits on a client while servers start, crash or restart must keep the daemon going. */
char *h_recv_line_draining(struct h_daemon *d, struct h_conn *c, int timeout_ms);

/* ---- Helpers for MCP clients: a connection and the messages it received that no test
 * step took yet, so a step can wait for one message while others arrive meanwhile ---- */

struct h_client {
        struct h_daemon *d;          /* drained while waiting (see h_notify_drain) */
        struct h_conn *c;
        json_object *inbox;          /* array of messages read but not taken */
};

typedef bool (*h_matcher)(json_object *msg, const char *arg);

/* Connects to d's MCP socket; unless raw, initialize (asserting the answer) and
 * notifications/initialized. *init_result, if not NULL, gets initialize's answer. */
struct h_client *h_client_open(struct h_daemon *d, bool raw, json_object **init_result);
/* h_client_open (not raw), declaring capabilities (JSON text of initialize's
 * params.capabilities, "{}" for none): for the requests servers send to clients. */
struct h_client *h_client_open_with(struct h_daemon *d, const char *capabilities, json_object **init_result);
void h_client_close(struct h_client *x);
/* Closes x, d's only client, and waits until the daemon has freed it (its STATUS= counts no
 * client again): until then its socket is one of the daemon's descriptors, and a closed
 * client is read to its end on a later loop turn. */
void h_client_close_freed(struct h_daemon *d, struct h_client *x);
/* Compact JSON text of o (valid until o changes). */
const char *h_json_text(json_object *o);
/* The next message off the wire (not the inbox), or NULL on timeout or EOF; asserts JSON. */
json_object *h_client_read(struct h_client *x, int timeout_ms);
/* An answer (no "method") whose id, as JSON text, is arg: "1", "\"a\"". */
bool h_is_answer(json_object *msg, const char *arg);
/* A message whose method is arg. */
bool h_is_method(json_object *msg, const char *arg);
/* The first message that matches, from the inbox or read within timeout_ms (others go to
 * the inbox); NULL if none. The caller owns it. */
json_object *h_take(struct h_client *x, h_matcher match, const char *arg, int timeout_ms);
/* Removes the matching messages from the inbox; returns how many there were. */
unsigned h_inbox_drop(struct h_client *x, h_matcher match, const char *arg);
/* Sends a request; params (JSON text) may be NULL. */
void h_client_request(struct h_client *x, const char *id, const char *method, const char *params);
/* The answer for id, asserting it comes within H_TIMEOUT_MS. */
json_object *h_client_answer(struct h_client *x, const char *id);
/* h_client_request, then h_client_answer. */
json_object *h_client_call(struct h_client *x, const char *id, const char *method, const char *params);
/* tools/call name with arguments (JSON text), by id. */
void h_client_tool_request(struct h_client *x, const char *id, const char *name, const char *arguments);
/* h_client_tool_request, then h_client_answer. */
json_object *h_client_tool_call(struct h_client *x, const char *id, const char *name, const char *arguments);
/* The text of a tool's result, asserting it is one. */
const char *h_result_text(json_object *msg);
/* The names of a list answer's items (key "tools", "prompts", ...; field "name", "uri", ...),
 * comma-separated, in a static buffer that the next call may move: use it before calling
 * again. */
const char *h_names_of(json_object *msg, const char *key, const char *field);
/* h_names_of for "tools". */
const char *h_tool_names(json_object *msg);
/* True if name is an item of list, comma-separated as h_names_of makes it. */
bool h_has_item(const char *list, const char *name);

/* ---- Helpers for the control socket (test_reload.c) ---- */

/* One request on a new connection to d's control socket (no initialize needed): method
 * with params (JSON text of an object, or NULL for none), id 1. Returns its answer, asserting
 * one comes within H_TIMEOUT_MS, draining d's NOTIFY datagrams meanwhile (a reload sends
 * several before it answers). The caller owns the answer. */
json_object *h_control(struct h_daemon *d, const char *method, const char *params);
/* ---- end of the control socket helpers ---- */

/* ---- Helpers for fault-injection tests (test_faults.c, test_load.c): what a process holds,
 * read from /proc, and a load of several clients that accounts for every answer ---- */

/* What a process holds: proc_fd_count(), proc_rss_kib(), proc_cpu_ms() (proc-stats.h). */
/* Live processes whose environment holds exactly the entry NAME=value: a tag a test gives its
 * servers finds them, and everything they started, wherever they were re-parented. */
unsigned h_count_processes_with_env(const char *entry);

/* One kind of request a load sends: tools/call of tool. */
struct h_call_kind {
        const char *tool;            /* exposed name: "a__echo" */
        const char *arguments;       /* JSON text; NULL: {"text": a text unique to the request},
                                      * which a result must echo back */
        bool may_fail;               /* its server is the one at fault: an error is an answer too;
                                      * otherwise only a result is */
};

/* What a load saw, in all or for one kind. */
struct h_load_stats {
        unsigned sent, results, errors;
        unsigned duplicates;         /* a second answer to an id */
        unsigned strays;             /* an answer to an id never sent, or not a number */
        unsigned wrong;              /* a result whose echo is not the request's text, or an
                                      * error for a kind that may not fail */
        unsigned eofs;               /* clients the daemon disconnected */
        long long max_latency_ms;    /* of answers to kinds that may not fail */
};

struct h_load;

/* n clients on d's MCP socket, initialized; each keeps up to window requests in flight,
 * request i of client c of kind (c + i) % n_kinds. kinds must outlive the load. */
struct h_load *h_load_new(struct h_daemon *d, unsigned clients, unsigned window, const struct h_call_kind *kinds,
                          size_t n_kinds);
/* Gives every client n more requests to send. */
void h_load_add(struct h_load *l, unsigned n);
/* Sends and reads (draining d's NOTIFY datagrams) for up to timeout_ms; true as soon as every
 * request given has been sent and answered. */
bool h_load_pump(struct h_load *l, int timeout_ms);
/* h_load_pump until done, asserting it is within timeout_ms; then that every request got
 * exactly one answer, none stray, none wrong, no client was disconnected. */
void h_load_finish(struct h_load *l, int timeout_ms);
/* Totals, or those of kinds[kind] (kind < n_kinds). */
struct h_load_stats h_load_stats(const struct h_load *l);
struct h_load_stats h_load_kind_stats(const struct h_load *l, size_t kind);
/* Closes the clients. */
void h_load_free(struct h_load *l);
/* ---- end of the fault-injection helpers ---- */

/* For a test's .fini: Criterion reports a failed assertion there but still counts the
 * test as passed, so a check that must hold after every test (a clean stop, no process
 * left) aborts instead, which fails the run. */
void h_teardown_expect(bool ok, const char *what);
