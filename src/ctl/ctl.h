/* mcpvisorctl: what its commands share. One file per command (tmux's cmd-*.c), each
 * exporting a struct ctl_command that mcpvisorctl.c lists in its table. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "paths.h"

#define CTL_NAME "mcpvisorctl"

/* How long a command waits for the daemon when it names no time of its own and --timeout
 * is not given: one request's answer. */
#define CTL_DEFAULT_TIMEOUT_USEC (10 * 1000 * 1000ULL)

/* Exit statuses, as systemctl uses them. */
enum {
        CTL_EXIT_OK = 0,
        CTL_EXIT_FAILURE = 1,   /* the daemon refused, did not answer, or the goal was not reached */
        CTL_EXIT_USAGE = 2,
        CTL_EXIT_NOT_READY = 3, /* status: an enabled server is not ready (systemctl is-active's 3) */
};

/* The options a command may take beyond the global ones. */
enum {
        CTL_OPT_JSON = 1 << 0,
        CTL_OPT_NO_WAIT = 1 << 1,
        CTL_OPT_TIMEOUT = 1 << 2,
        CTL_OPT_ACCESS_USER = 1 << 3, /* access --user NAME */
        CTL_OPT_PROFILE = 1 << 4,
        CTL_OPT_FOLLOW = 1 << 5,      /* logs -f */
        CTL_OPT_LINES = 1 << 6,       /* logs -n N */
        CTL_OPT_CLIENT = 1 << 7,      /* stop --client ID */
};

struct ctl {
        const char *socket_path;  /* -s; NULL: see ctl_mcp_path() */
        const char *control_path; /* -C; NULL: see ctl_control_path() */
        enum path_scope scope;    /* --system, --user; AUTO: neither */
        bool json;                /* --json */
        bool no_wait;             /* --no-wait */
        uint64_t timeout_usec;    /* --timeout, else the command's default */
        const char *access_user;  /* access --user NAME, stop --user NAME */
        const char *client_id;    /* stop --client ID */
        const char *profile;      /* --profile */
        bool follow;              /* logs -f, --follow */
        unsigned lines;           /* logs -n, --lines; 0: the command's default */
        char *defaults[2];        /* default paths computed for this run, freed at exit */
};

struct ctl_command {
        const char *name;
        const char *synopsis;     /* its arguments and options, for --help */
        const char *summary;
        int min_args, max_args;   /* max_args -1: any number */
        unsigned options;         /* CTL_OPT_* it accepts */
        uint64_t default_timeout_usec; /* 0: CTL_DEFAULT_TIMEOUT_USEC */
        /* argv holds the arguments after the command's name; returns an exit status. */
        int (*run)(struct ctl *ctl, int argc, char **argv);
};

extern const struct ctl_command ctl_cmd_status;
extern const struct ctl_command ctl_cmd_clients;
extern const struct ctl_command ctl_cmd_disconnect;
extern const struct ctl_command ctl_cmd_start;
extern const struct ctl_command ctl_cmd_stop;
extern const struct ctl_command ctl_cmd_restart;
extern const struct ctl_command ctl_cmd_reload;
extern const struct ctl_command ctl_cmd_connect;
extern const struct ctl_command ctl_cmd_access;
extern const struct ctl_command ctl_cmd_logs;
extern const struct ctl_command ctl_cmd_login;
extern const struct ctl_command ctl_cmd_logout;
extern const struct ctl_command ctl_cmd_client_metadata;

/* The socket to use: -s/-C, else --system/--user, else the environment, else the default
 * (path_client_socket()). NULL after printing why there is none. */
const char *ctl_control_path(struct ctl *ctl);
const char *ctl_mcp_path(struct ctl *ctl);
