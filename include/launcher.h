/* How a run's program is launched, signalled and seen to end: one table of operations per
 * launcher, as systemd gives each unit type a vtable. run.c owns the run (its pipes,
 * its connection, its stderr reader) and calls only these; server.c, supervisor.c and the
 * status answer ask run.c. The exec launcher (launcher-exec.c) spawns the program as a
 * child of the daemon; the systemd launcher (launcher-systemd.c) runs it as a transient unit.
 *
 * A launcher reports the end of what it started once, through run_ended(); after
 * that the run is retired, and freed (ops->free) after the loop iteration. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct run;
struct server_config;
struct supervisor;
struct server_exit;
struct server_transport;

/* The server's ends of its three pipes, to become the program's fds 0, 1 and 2: the read
 * end of its stdin, the write ends of its stdout and stderr. The daemon keeps the others. */
struct run_stdio {
        int in;
        int out;
        int err;
};

/* What a run uses now, read when asked (the status answer): cheap file reads. A figure
 * not known is RUN_USAGE_UNKNOWN, shown as a dash; none is ever guessed. */
#define RUN_USAGE_UNKNOWN UINT64_MAX
struct run_usage {
        const char *unit;        /* the unit that runs it, or NULL (valid while the run is) */
        uint64_t memory_current; /* bytes */
        uint64_t memory_peak;    /* bytes */
        uint64_t cpu_usec;
        uint64_t tasks;
};

/* What a launcher's daemon-wide part is made for, before the first start. */
struct run_setup {
        struct supervisor *sv;
        bool named;            /* the daemon's or some server's "launcher" names it */
        bool by_auto;          /* some server's "launcher" is "auto", which it may turn out to be */
        const char *daemon_id; /* what a dead predecessor on it left is ended; NULL: nothing is ours */
};

/* What a run's stop is called in the logs, step by step, in its launcher's own words: the
 * close sequence is the same for every run (server.c), what each step does is not. */
struct run_words {
        const char *input;      /* what the first step closes: "closed its stdin", "closed its session" */
        const char *terminate;  /* the second step, after stopTimeout: "sending SIGTERM" */
        const char *terminated; /* after it: "still running 1 s after SIGTERM" */
        const char *kill;       /* the third, after killTimeout: "sending SIGKILL" */
        const char *killed;     /* "pid 12 has not ended after SIGKILL" */
        const char *stuck;      /* a guess at why it still has not ended, or "" */
        /* The signals terminate and kill send, as the status answer tells an end that came
         * after them (server_exit.signal_sent); 0 for a launcher that sends none. */
        int terminate_signal;
        int kill_signal;
};

struct run_ops {
        const char *name;   /* "exec", "systemd", "http" */
        /* The value of "launcher" that picks it (enum launcher), or -1 for a launcher that
         * serves() picks instead; see run_ops_for() in run.c. */
        int kind;
        /* A server this launcher runs whatever "launcher" says (a server reached by URL); NULL
         * for launchers picked by kind. */
        bool (*serves)(const struct server_config *c);
        const struct run_words *words;
        /* Its daemon-wide part (the connection to the service manager), made in *part before
         * the first start when a server may need it (it may decide what "auto" is: the
         * supervisor's launcher_auto); it logs what it decided, and a failure leaves its runs
         * unable to start, saying why. NULL: none, or made by the first run that needs it
         * (run_launcher_part_of()). */
        void (*init)(void **part, const struct run_setup *setup);
        /* Frees its daemon-wide part (NULL-safe), after every run was freed. NULL: none. */
        void (*done)(void *part);
        /* What the run is of, for the logs: its command, its URL. */
        const char *(*target)(const struct server_config *c);
        /* Where a run with no pid is reached, for the status answer ("url"); NULL: by its pid. */
        const char *(*url)(const struct server_config *c);
        /* Its program writes a stderr the daemon reads and logs as the server's own lines
         * (journalctl -t NAME); false for a run with none (a server reached by URL), whose
         * log is only the daemon's lines about it. */
        bool writes_stderr;
        /* Checks c may be run by it, before anything is made: 0, or -EPERM with *error
         * malloc'd (what to fix). NULL: anything may. */
        int (*check)(const struct server_config *c, char **error);
        /* A launcher whose program the daemon reaches otherwise than on its stdin and
         * stdout (a server reached by URL) makes the connection's transport itself, before
         * start, which then gets no environment and no stdio; it may set in->launcher.
         * NULL for launchers of programs on pipes, which run.c makes. 0, or a
         * negative errno with *error malloc'd (what to fix) or NULL. */
        int (*open_transport)(struct run *in, const struct server_config *c, struct server_transport **ret,
                              char **error);
        /* Starts the program of c with environment env. Takes the fds of stdio in any case
         * (closed, or handed to the program); both NULL after open_transport. 0, or a negative errno with *error malloc'd
         * (what to fix) or NULL. May complete later: a start that fails then is reported
         * as the run's end. Sets in->launcher, the launcher's own data. */
        int (*start)(struct run *in, const struct server_config *c, char **env, const struct run_stdio *stdio,
                     char **error);
        /* SIGTERM (and SIGCONT) to everything the run started; 0 or -errno (-ESRCH: ended). */
        int (*terminate)(struct run *in);
        /* SIGKILL to everything the run started. */
        int (*kill)(struct run *in);
        /* The daemon is exiting without its loop: SIGKILL everything and wait until it is
         * gone. Its end is not reported. */
        void (*kill_wait)(struct run *in);
        /* SIGCHLD said that pid main_pid() may have exited: collect it now and report the
         * end, if so; true if it did. NULL for launchers whose program is not the daemon's
         * child. */
        bool (*reap)(struct run *in);
        /* How it ended, once it has: code and status as struct server_exit holds them
         * (with a launcher's own reason there, such as "killed by the OOM killer"). It
         * overwrites *ret; the reason it allocates is the caller's, freed by
         * server_exit_done(). */
        void (*describe_end)(const struct run *in, struct server_exit *ret);
        /* What the logs call it: "pid 1234", "unit mcpvisor-fs@106bb1be-3.service". */
        const char *(*describe)(const struct run *in, char *buf, size_t size);
        /* The pid of the program it started; 0 when not known (yet). */
        pid_t (*main_pid)(const struct run *in);
        /* What it uses now: its unit's cgroup, or its main process as /proc shows it. */
        void (*usage)(const struct run *in, struct run_usage *ret);
        /* Releases in->launcher: the run has ended, or the daemon is exiting. */
        void (*free)(struct run *in);
};

/* The words of a run that is a process group on pipes, signalled by the daemon (exec). */
extern const struct run_words run_process_words;

/* Every launcher, in the order run_ops_for() (run.c) asks them; the supervisor keeps
 * each one's daemon-wide part. */
#define RUN_LAUNCHERS 3
extern const struct run_ops *const run_launchers[RUN_LAUNCHERS];
/* Where the supervisor keeps the daemon-wide part of ops. */
void **run_launcher_part(struct supervisor *sv, const struct run_ops *ops);

/* Spawns the program as the daemon's child; see launcher-exec.c and process.h. */
extern const struct run_ops run_exec_ops;

/* Starts the program as a transient unit of the service manager that runs the daemon;
 * see launcher-systemd.c. Its runs need its daemon-wide part, struct run_systemd. */
extern const struct run_ops run_systemd_ops;

/* A server reached by URL: no program, the run is its HTTP session; see launcher-http.c. */
extern const struct run_ops run_http_ops;
struct curl_loop;
/* The daemon's curl loop (the HTTP launcher's daemon-wide part), made on first need, for
 * the sign-in's exchanges too (oauth-tokens.h): 0, or -ENOENT with *error (static) when
 * libcurl cannot be loaded. */
int launcher_http_loop(struct supervisor *sv, struct curl_loop **ret, const char **error);

struct bus;
struct logger;
struct run_systemd;

/* The systemd launcher's daemon-wide part over bus (connected, kept by the caller, freed
 * after this): the credentials helper's path, User= for units, the runs to end when the
 * connection is lost. Its init makes one over a bus of its own, which its done frees. */
int run_systemd_new(struct bus *bus, const struct logger *log, struct run_systemd **ret);
/* After every run of it was freed. NULL-safe. */
void run_systemd_free(struct run_systemd *rs);
/* Where a run of the systemd launcher is in its life: "starting", "running", "ending",
 * "ended" (reported), "abandoned" (killed at the daemon's exit); NULL before its start. */
const char *run_systemd_state(const struct run *in);

/* For a launcher's start: sets *error for a lack of descriptors or processes (-EMFILE,
 * -ENFILE, -EAGAIN), where to raise the limit; false, and nothing set, for other errors. */
bool run_explain_shortage(int r, char **error);
