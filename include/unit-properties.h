/* The transient unit that runs one start of a server under the systemd launcher, as data:
 * its name and its properties (name, D-Bus type, value), built from the server's entry
 * and what the start knows (the manager, the daemon's marker, the run number, the
 * program found, the descriptors to hand over), then appended to a StartTransientUnit
 * call in the a(sv) shape it takes. Pure: no bus, no file read; bus.c sends it.
 *
 * The types are those systemd's manager reads them in (src/core/dbus-execute.c,
 * dbus-cgroup.c, dbus-kill.c, dbus-service.c, dbus-unit.c; org.freedesktop.systemd1(5)
 * of 252): ProtectSystem= and ProtectHome= are strings, capability sets "t", UMask= "u",
 * SystemCallFilter= and RestrictAddressFamilies= "(bas)", LoadCredential= "a(ss)",
 * ExecStartEx= "a(sasas)" with an absolute path and the flag "no-env-expand", the
 * standard descriptors "h".
 *
 * Secrets never become properties (systemctl show and the bus are readable by every
 * local user): an env value read from a credential is given as LoadCredential=ID:PATH
 * (PATH in the daemon's own credentials directory; the manager reads it), and ExecStartEx=
 * runs the server through mcpvisor-exec-credentials VAR=ID ... -- PROGRAM ARGS, which
 * moves each into the server's environment before exec. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "confinement.h"
#include "server-config.h"

struct run_as;

/* Units are mcpvisor-NAME@TAG-N.service: TAG the daemon's, 8 hex digits of the hash of
 * its MCPVISOR_DAEMON= (the MCP socket's path), so two daemons on one manager never give
 * the same name, and one on the socket a dead daemon used gives that one's names (found
 * and stopped at start-up, bus_stop_leftovers()); N the server's run, so a new start never
 * waits for the old unit to be collected. */
#define UNIT_PREFIX "mcpvisor-"
#define UNIT_PATTERN "mcpvisor-*@*.service"
#define UNIT_SLICE_SYSTEM "mcpvisor.slice"
#define UNIT_SLICE_USER "app-mcpvisor.slice" /* below the user manager's app.slice */
#define UNIT_CREDENTIAL_HELPER "mcpvisor-exec-credentials"

enum unit_property_type {
        UNIT_PROPERTY_STRING, /* s */
        UNIT_PROPERTY_BOOL,   /* b */
        UNIT_PROPERTY_U32,    /* u */
        UNIT_PROPERTY_U64,    /* t */
        UNIT_PROPERTY_STRV,   /* as */
        UNIT_PROPERTY_EXEC,   /* a(sasas): one command, path and argv, no $VAR expanded, its failure not ignored */
        UNIT_PROPERTY_LIST,   /* (bas): flag true for an allow-list, strv the items */
        UNIT_PROPERTY_PAIRS,  /* a(ss): strv holds ID, PATH, ID, PATH, ... */
        UNIT_PROPERTY_FD,     /* h: the descriptor (the caller's; sd-bus sends a copy) */
};

struct unit_property {
        const char *name;     /* static */
        enum unit_property_type type;
        char *string;         /* STRING; EXEC: the path */
        char **strv;          /* STRV, LIST, PAIRS; EXEC: argv */
        bool flag;            /* BOOL, LIST */
        uint64_t number;      /* U32, U64 */
        int fd;               /* FD */
};

struct unit_properties {
        char *unit;           /* mcpvisor-NAME@TAG-N.service */
        struct unit_property *items;
        size_t n, allocated;
};

/* What one start of a server knows besides its entry. */
struct unit_input {
        const struct server_config *server;
        enum manager_kind manager;
        const char *daemon_id;        /* MCPVISOR_DAEMON= (environment.h), by which leftovers are found; NULL: none */
        uint64_t run;                 /* the run number: the unit's instance and MCPVISOR_INSTANCE= */
        const char *program;          /* the command found (environment_find_server_program); relative only with a cwd */
        char *const *daemon_env;      /* the daemon's environment: PATH, LANG, LC_*, TZ are passed on */
        const char *credentials_dir;  /* the daemon's $CREDENTIALS_DIRECTORY, or NULL */
        const char *credential_helper; /* absolute path of mcpvisor-exec-credentials */
        /* User= under the system manager for an entry that names no user: the daemon's own,
         * root's too (a unit without User= runs as root with no HOME); NULL for none. */
        const char *default_user;
        /* The user it runs as when not the daemon's (run-as.h), or NULL: User= that user's
         * (not default_user), WorkingDirectory= its home unless the entry has a cwd. */
        const struct run_as *run_as;
        /* AddRef=: the unit is kept until the daemon's bus connection drops or UnrefUnit().
         * Only over a bus broker: the manager tracks its peers by unique name, and a direct
         * connection (the private socket) has none, so StartTransientUnit would fail. */
        bool add_ref;
        int stdio[3];                 /* stdin, stdout, stderr to hand over; -1: not passed */
};

/* mcpvisor-NAME@TAG-N.service in *ret (mcpvisor-NAME@N.service without a daemon_id);
 * -EINVAL for a name that is not a server's. */
int unit_name(const char *server, const char *daemon_id, uint64_t run, char **ret);

/* Builds the unit's name and properties into *ret. -EINVAL with *error (malloc'd) saying
 * what to change when the entry cannot be such a unit (User= under a user manager, a
 * credential without the daemon's credentials, an env value systemd refuses, a relative
 * program without cwd); -ENOMEM. */
int unit_properties_build(const struct unit_input *in, struct unit_properties *ret, char **error);
void unit_properties_done(struct unit_properties *p);

/* The unit that registers a server's OOM watch (oom-watch.h) for a daemon to which the
 * cgroup file system is read-only: a oneshot of the system manager, named after the
 * server's unit (mcpvisor-NAME@TAG-N-oom.service), running /bin/sh to write "0 2" to
 * event_control with the watch's eventfd as its stdin and memory.oom_control as its
 * stderr. It runs as root (cgroup.event_control is root's, mode 0200), without
 * capabilities. -EINVAL for a server unit not named so; -ENOMEM. */
int unit_properties_build_oom_registrar(const char *server_unit, const char *event_control, int efd, int control,
                                        struct unit_properties *ret);

/* The first property called name, or NULL. */
const struct unit_property *unit_properties_find(const struct unit_properties *p, const char *name);

/* Appends the a(sv) array of the properties to m (a StartTransientUnit call, positioned
 * after its mode argument). */
int unit_properties_append(const struct unit_properties *p, sd_bus_message *m);
