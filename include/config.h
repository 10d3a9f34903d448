/* The configuration file: claude_desktop_config.json's shape plus an optional
 * "mcpvisor" object of daemon settings. Every problem is collected with its JSON path. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "access.h"
#include "http-config.h"
#include "macro.h"
#include "server-config.h"

enum problem_severity { PROBLEM_WARNING, PROBLEM_ERROR };

struct config_problem {
        enum problem_severity severity;
        char *file;     /* the file it was found in; NULL when parsing text */
        char *path;     /* JSON path, e.g. "mcpvisor.socketMode"; "" for the whole file */
        char *message;
};

struct config_problems {
        struct config_problem *items;
        size_t count;
        size_t errors;
        const char *file; /* the file being read now; copied into each problem */
};

void problems_add(struct config_problems *p, enum problem_severity severity, const char *path,
                  const char *fmt, ...) _printf_(4, 5);
/* The same for a problem found after loading, in the file a server's entry came from. */
void problems_add_in(struct config_problems *p, const char *file, enum problem_severity severity, const char *path,
                     const char *fmt, ...) _printf_(5, 6);
void problems_done(struct config_problems *p);

#define CONFIG_DEFAULT_MAX_MESSAGE (16u * 1024 * 1024)
/* Servers' answers are larger than clients' requests (a file read, an image): 64 MiB fits
 * what real tools return, and a server's connection holds at most one line of it. */
#define CONFIG_DEFAULT_MAX_SERVER_MESSAGE (64u * 1024 * 1024)
#define CONFIG_DEFAULT_OUTPUT_LIMIT (64u * 1024 * 1024)
#define CONFIG_DEFAULT_SERVER_INPUT_LIMIT (64u * 1024 * 1024)
#define CONFIG_DEFAULT_SOCKET_MODE 0660
#define CONFIG_DEFAULT_SHUTDOWN_TIMEOUT 10.0
#define CONFIG_DEFAULT_LIST_WAIT 5.0
#define CONFIG_DEFAULT_LIST_PAGE_SIZE 500
#define CONFIG_DEFAULT_MRTR_TIMEOUT 300.0
#define CONFIG_DEFAULT_MRTR_SETTLE 0.03
#define CONFIG_DEFAULT_MAX_IN_FLIGHT 1024
#define CONFIG_DEFAULT_MAX_CLIENTS_PER_USER 256

struct config {
        char *socket_path;           /* "socket": NULL = default path */
        char *control_socket_path;   /* "controlSocket" */
        int socket_mode;             /* "socketMode": octal string, e.g. "0660" */
        int log_level;               /* "logLevel": -1 = not set */
        size_t max_message_size;     /* "maxMessageSize": bytes per JSON-RPC line from a client */
        size_t max_server_message_size; /* "maxServerMessageSize": bytes per line from a server */
        size_t client_output_limit;  /* "clientOutputLimit": unsent bytes before a client is dropped */
        size_t server_input_limit;   /* "serverInputLimit": unsent bytes before calls to a server are refused */
        unsigned max_in_flight;      /* "maxInFlight": requests held for one client at a time */
        unsigned max_clients_per_user; /* "maxClientsPerUser": MCP connections of one uid; 0 = no limit */
        double shutdown_timeout;     /* "shutdownTimeout": seconds for a clean stop */
        char *tool_name_separator;   /* "toolNameSeparator": NULL = "__" */
        double list_wait;            /* "listWait": seconds a list waits for starting servers */
        unsigned list_page_size;     /* "listPageSize": items per page toward clients; 0 = all */
        double idle_exit;            /* "idleExit": seconds without clients before exiting; 0 = never */
        char *control_group;         /* "controlGroup": a group whose members may use the control socket */
        struct access_policy access; /* "access" (rules) and "profiles": who sees and calls what */
        int audit;                   /* "audit": enum audit_mode */
        int launcher;                /* "launcher": enum launcher, of the servers that do not choose one */
        int sandbox;                 /* "sandbox": enum sandbox, of the servers that do not choose one */
        struct http_config http;     /* "http": the Streamable HTTP front door */
        unsigned max_http_sessions;  /* "maxHttpSessions" */
        double http_session_idle;    /* "httpSessionIdle": seconds before an unused HTTP session ends */
        double mrtr_timeout;         /* "mrtrTimeout": seconds a round of input_required waits for its retry */
        double mrtr_settle;          /* "mrtrSettle": seconds of quiet after a server's last request of a round */
        struct server_config *servers; /* "mcpServers": the valid, enabled and disabled entries */
        size_t n_servers;
        uint32_t *server_index;      /* servers by name (open addressing: entry number + 1, 0 free) */
        size_t server_index_size;    /* a power of two above twice n_servers, or 0: none */
};

void config_init_defaults(struct config *c);

/* Reads and validates path, then the drop-ins beside it (mcpvisor.d/NAME.json, in name
 * order; a later server entry of the same name replaces an earlier one, later settings win).
 * A missing file is an error unless missing_ok. Problems go to problems. The return is 0
 * when the daemon can run (warnings, and servers skipped for errors in their own entry,
 * are allowed: see problems->errors), else -EINVAL, -ENOENT, ... */
int config_load(const char *path, bool missing_ok, struct config *ret, struct config_problems *problems);

/* What a read is for. */
enum config_purpose {
        CONFIG_FOR_DAEMON, /* all or nothing, credentials read */
        CONFIG_FOR_CHECK,  /* --check-config: every problem told, credentials not read */
};

/* --check-config's read: config_load() (a missing file an error) that reads every file
 * and checks the whole whatever an earlier one held, and reads no credential (they are the
 * service's: a token's shape only is checked). *ret is filled, to be config_done(), with
 * what could be read (its servers can be checked further) on every return but -ENOMEM. */
int config_load_for_check(const char *path, struct config *ret, struct config_problems *problems);

/* For a reload: the daemon settings that take effect only at the daemon's start (sockets,
 * their mode, http.listen; a row may apply in part, its note saying which part waits).
 * changed(key, note) is called for each that differs between next and running; next is
 * then given the running values of those that wait whole (running gets next's), so that
 * the configuration in force says what is in force. Returns the number that differ. */
size_t config_keep_restart_settings(struct config *next, struct config *running,
                                    void (*changed)(const char *key, const char *note, void *userdata), void *userdata);
/* The i-th key of that table, NULL past its end (the tests check each names a setting). */
const char *config_restart_setting_key(size_t i);
/* key ("http.listen": its first part) is a daemon setting's. */
bool config_daemon_setting_known(const char *key);

/* Parses one document held in memory into a fresh config (the unit tests use it). */
int config_parse(const char *text, size_t len, struct config *ret, struct config_problems *problems);

void config_done(struct config *c);

/* The server called name, or NULL. */
const struct server_config *config_find_server(const struct config *c, const char *name);
