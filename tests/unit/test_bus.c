/* Unit tests for bus.c, against a service manager of the test's own: an sd-bus server in a
 * thread, at the other end of a socket pair, with the Manager methods, unit objects and
 * signals of systemd's D-Bus API that the daemon uses. The connection is direct, as over
 * the manager's private socket. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bus.h"
#include "run.h"
#include "launcher.h"
#include "server-cause.h"
#include "server.h"
#include "supervisor.h"
#include "config.h"
#include "log.h"
#include "macro.h"
#include "server-config.h"
#include "unit-helpers.h"

/* ---- the fake manager ---- */

#define FAKE_UNITS 4

struct fake_unit {
        char name[128];
        char active[32], sub[32], result[32];
        int32_t code, status;
        const char *env[3];
        bool collected; /* stopped: no longer listed, as CollectMode=inactive-or-failed does */
        unsigned collect_in; /* stopped, collected at the collect_in'th listing from now */
        /* collected, and read since: systemd loads a "not-found" stub to answer for it
         * (inactive, Result=success, ExecMain*=0), not an error */
        bool stub;
};

struct fake {
        int fd;
        pthread_t thread;
        atomic_bool stop;
        pthread_mutex_t lock;
        /* what it was asked */
        atomic_uint subscribes, starts, stops, kills, unrefs;
        char list_pattern[64], start_unit[128], start_mode[16], exec_path[256], property_names[2048], stopped[512], kill_who[16];
        char user[64];        /* User= of the last unit started, "" for none */
        char kill_result[32]; /* KillUnit ends the unit with this Result=, if set */
        int kill_signal;
        /* how it behaves */
        atomic_bool fail_start, hold_job;
        atomic_bool stub_after_kill; /* a unit KillUnit ended is a stub to later reads */
        atomic_bool drop_start_reply; /* the unit starts, its answer never comes */
        atomic_uint read_errors;      /* the next reads are answered with read_error */
        char read_error[64];
        atomic_uint reads, lists;     /* GetAll of a unit's Unit interface; ListUnitsByPatterns */
        atomic_uint get_errors;       /* the next Get of a property fail as LimitsExceeded */
        unsigned collect_delay;       /* a stopped unit is listed this many times more */
        struct fake_unit units[FAKE_UNITS];
        unsigned n_units, jobs;
};

static struct fake F = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static struct fake_unit *fake_find(const char *name) {
        for (unsigned i = 0; i < F.n_units; i++)
                if (strcmp(F.units[i].name, name) == 0)
                        return &F.units[i];
        return NULL;
}

static struct fake_unit *fake_add(const char *name) {
        struct fake_unit *u = fake_find(name);

        if (!u && F.n_units < FAKE_UNITS) {
                u = &F.units[F.n_units++];
                *u = (struct fake_unit){ .code = 0 };
                snprintf(u->name, sizeof u->name, "%s", name);
        }
        snprintf(u->active, sizeof u->active, "activating");
        snprintf(u->sub, sizeof u->sub, "start");
        snprintf(u->result, sizeof u->result, "success");
        return u;
}

static int unit_path(const char *name, char **ret) {
        return sd_bus_path_encode("/org/freedesktop/systemd1/unit", name, ret);
}

/* The unit object's two interfaces changed; Result only invalidated, as a test of reads. */
static void emit_changes(sd_bus *bus, const char *name) {
        char *path = NULL;

        if (unit_path(name, &path) < 0)
                return;
        /* The type's interface first, then the Unit's, as systemd sends them. */
        (void)sd_bus_emit_properties_changed(bus, path, "org.freedesktop.systemd1.Service", "ExecMainCode", "ExecMainStatus",
                                             "Result", NULL);
        (void)sd_bus_emit_properties_changed(bus, path, "org.freedesktop.systemd1.Unit", "ActiveState", "SubState", NULL);
        free(path);
}

/* Reads the a(sv) of properties, noting their names, ExecStartEx's path and User=, and
 * writes "hello" to a StandardOutputFileDescriptor, as the unit's process would. */
static int read_start_properties(sd_bus_message *m) {
        const char *name, *contents, *path;
        char type;
        int r = sd_bus_message_enter_container(m, 'a', "(sv)");

        while (r > 0 && (r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
                sd_bus_message_read(m, "s", &name);
                strncat(F.property_names, name, sizeof F.property_names - strlen(F.property_names) - 2);
                strcat(F.property_names, " ");
                sd_bus_message_peek_type(m, &type, &contents);
                if (strcmp(name, "ExecStartEx") == 0) {
                        sd_bus_message_enter_container(m, 'v', "a(sasas)");
                        sd_bus_message_enter_container(m, 'a', "(sasas)");
                        sd_bus_message_enter_container(m, 'r', "sasas");
                        sd_bus_message_read(m, "s", &path);
                        snprintf(F.exec_path, sizeof F.exec_path, "%s", path);
                        sd_bus_message_skip(m, "asas");
                        sd_bus_message_exit_container(m);
                        sd_bus_message_exit_container(m);
                        sd_bus_message_exit_container(m);
                } else if (strcmp(name, "User") == 0) {
                        sd_bus_message_read(m, "v", "s", &path);
                        snprintf(F.user, sizeof F.user, "%s", path);
                } else if (strcmp(name, "StandardOutputFileDescriptor") == 0) {
                        int fd;

                        sd_bus_message_read(m, "v", "h", &fd);
                        (void)!write(fd, "hello", 5);
                } else
                        sd_bus_message_skip(m, "v");
                r = sd_bus_message_exit_container(m);
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int method_start(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *unit, *mode;
        char job[64];
        unsigned id;

        sd_bus_message_read(m, "ss", &unit, &mode);
        pthread_mutex_lock(&F.lock);
        snprintf(F.start_unit, sizeof F.start_unit, "%s", unit);
        snprintf(F.start_mode, sizeof F.start_mode, "%s", mode);
        F.property_names[0] = F.user[0] = '\0';
        read_start_properties(m);
        pthread_mutex_unlock(&F.lock);
        F.starts++;
        if (F.fail_start)
                return sd_bus_error_setf(error, "org.freedesktop.systemd1.UnitExists", "Unit %s already exists.", unit);
        id = ++F.jobs;
        snprintf(job, sizeof job, "/org/freedesktop/systemd1/job/%u", id);
        fake_add(unit);
        if (F.drop_start_reply) {
                snprintf(fake_find(unit)->active, 32, "active");
                snprintf(fake_find(unit)->sub, 32, "running");
                return 1;
        }
        sd_bus_reply_method_return(m, "o", job);
        if (F.hold_job)
                return 1;
        snprintf(fake_find(unit)->active, 32, "active");
        snprintf(fake_find(unit)->sub, 32, "running");
        sd_bus_emit_signal(sd_bus_message_get_bus(m), "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                           "JobRemoved", "uoss", id, job, unit, "done");
        emit_changes(sd_bus_message_get_bus(m), unit);
        return 1;
}

/* SIGTERM to the cgroup: the process ends by it, the unit is inactive. */
static int method_stop(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *unit, *mode;
        struct fake_unit *u;

        sd_bus_message_read(m, "ss", &unit, &mode);
        pthread_mutex_lock(&F.lock);
        strncat(F.stopped, unit, sizeof F.stopped - strlen(F.stopped) - 2);
        strcat(F.stopped, " ");
        pthread_mutex_unlock(&F.lock);
        F.stops++;
        if (!(u = fake_find(unit)))
                return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", unit);
        snprintf(u->active, 32, "inactive");
        snprintf(u->sub, 32, "dead");
        u->code = CLD_KILLED;
        u->status = SIGTERM;
        u->collect_in = F.collect_delay;
        u->collected = !F.collect_delay;
        sd_bus_reply_method_return(m, "o", "/org/freedesktop/systemd1/job/99");
        emit_changes(sd_bus_message_get_bus(m), unit);
        return 1;
}

static int method_kill(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *unit, *who;
        int32_t signal;

        sd_bus_message_read(m, "ssi", &unit, &who, &signal);
        pthread_mutex_lock(&F.lock);
        snprintf(F.kill_who, sizeof F.kill_who, "%s", who);
        F.kill_signal = signal;
        pthread_mutex_unlock(&F.lock);
        F.kills++;
        if (F.kill_result[0] && fake_find(unit)) {
                struct fake_unit *u = fake_find(unit);

                snprintf(u->active, 32, "failed");
                snprintf(u->sub, 32, "failed");
                snprintf(u->result, 32, "%s", F.kill_result);
                u->code = CLD_KILLED;
                u->status = signal;
                sd_bus_reply_method_return(m, NULL);
                emit_changes(sd_bus_message_get_bus(m), unit);
                u->stub = F.stub_after_kill; /* after the signals, which carry the real values */
                return 1;
        }
        return sd_bus_reply_method_return(m, NULL);
}

static int method_unref(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        F.unrefs++;
        return sd_bus_reply_method_return(m, NULL);
}

static int method_subscribe(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        F.subscribes++;
        return sd_bus_reply_method_return(m, NULL);
}

static int method_list(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        sd_bus_message *reply = NULL;
        char **states = NULL, **patterns = NULL;

        sd_bus_message_read_strv(m, &states);
        sd_bus_message_read_strv(m, &patterns);
        pthread_mutex_lock(&F.lock);
        snprintf(F.list_pattern, sizeof F.list_pattern, "%s|%s", states && states[0] ? states[0] : "",
                 patterns && patterns[0] && !patterns[1] ? patterns[0] : "?");
        pthread_mutex_unlock(&F.lock);
        F.lists++;
        for (unsigned i = 0; i < F.n_units; i++)
                if (F.units[i].collect_in && --F.units[i].collect_in == 0)
                        F.units[i].collected = true;
        sd_bus_message_new_method_return(m, &reply);
        sd_bus_message_open_container(reply, 'a', "(ssssssouso)");
        for (unsigned i = 0; i < F.n_units; i++) {
                char *path = NULL;

                if (F.units[i].collected)
                        continue;
                unit_path(F.units[i].name, &path);
                sd_bus_message_append(reply, "(ssssssouso)", F.units[i].name, "", "loaded", F.units[i].active, F.units[i].sub,
                                      "", path, 0, "", "/");
                free(path);
        }
        sd_bus_message_close_container(reply);
        sd_bus_send(NULL, reply, NULL);
        sd_bus_message_unref(reply);
        for (char **s = states; s && *s; s++)
                free(*s);
        free(states);
        for (char **s = patterns; s && *s; s++)
                free(*s);
        free(patterns);
        return 1;
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Subscribe", "", "", method_subscribe, 0),
        SD_BUS_METHOD("StartTransientUnit", "ssa(sv)a(sa(sv))", "o", method_start, 0),
        SD_BUS_METHOD("StopUnit", "ss", "o", method_stop, 0),
        SD_BUS_METHOD("KillUnit", "ssi", "", method_kill, 0),
        SD_BUS_METHOD("UnrefUnit", "s", "", method_unref, 0),
        SD_BUS_METHOD("ListUnitsByPatterns", "asas", "a(ssssssouso)", method_list, 0),
        SD_BUS_SIGNAL("JobRemoved", "uoss", 0),
        SD_BUS_VTABLE_END,
};

static int get_string(sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply,
                      void *userdata, sd_bus_error *error) {
        struct fake_unit *u = userdata;

        if (strcmp(property, "LoadState") == 0)
                return sd_bus_message_append(reply, "s", u->stub ? "not-found" : "loaded");
        if (u->stub && (strcmp(property, "ActiveState") == 0 || strcmp(property, "SubState") == 0 ||
                        strcmp(property, "Result") == 0))
                return sd_bus_message_append(reply, "s", strcmp(property, "ActiveState") == 0 ? "inactive"
                                                         : strcmp(property, "SubState") == 0  ? "dead"
                                                                                                : "success");
        if (strcmp(property, "ActiveState") == 0)
                return sd_bus_message_append(reply, "s", u->active);
        if (strcmp(property, "SubState") == 0)
                return sd_bus_message_append(reply, "s", u->sub);
        if (strcmp(property, "Result") == 0)
                return sd_bus_message_append(reply, "s", u->result);
        return sd_bus_message_append(reply, "s", "/mcpvisor.slice/x.service");
}

static int get_int(sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply,
                   void *userdata, sd_bus_error *error) {
        struct fake_unit *u = userdata;

        if (strcmp(property, "ExecMainPID") == 0)
                return sd_bus_message_append(reply, "u", u->stub ? (uint32_t)0 : (uint32_t)4242);
        if (u->stub)
                return sd_bus_message_append(reply, "i", (int32_t)0);
        return sd_bus_message_append(reply, "i", strcmp(property, "ExecMainCode") == 0 ? u->code : u->status);
}

static int get_environment(sd_bus *bus, const char *path, const char *interface, const char *property, sd_bus_message *reply,
                           void *userdata, sd_bus_error *error) {
        struct fake_unit *u = userdata;

        return sd_bus_message_append_strv(reply, (char **)u->env);
}

static const sd_bus_vtable unit_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("LoadState", "s", get_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ActiveState", "s", get_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("SubState", "s", get_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Id", "s", get_string, 0, 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable service_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Result", "s", get_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("ControlGroup", "s", get_string, 0, 0),
        SD_BUS_PROPERTY("ExecMainCode", "i", get_int, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ExecMainStatus", "i", get_int, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ExecMainPID", "u", get_int, 0, 0),
        SD_BUS_PROPERTY("Environment", "as", get_environment, 0, 0),
        SD_BUS_VTABLE_END,
};

static int find_unit(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found, sd_bus_error *error) {
        char *name = NULL;
        struct fake_unit *u;

        sd_bus_message *m = sd_bus_get_current_message(bus);

        /* a read (GetAll of the Unit interface, the first of its two calls) */
        if (m && sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "GetAll") &&
            strcmp(interface, "org.freedesktop.systemd1.Unit") == 0) {
                F.reads++;
                if (F.read_errors > 0) {
                        F.read_errors--;
                        return sd_bus_error_setf(error, F.read_error, "the fake manager refuses this read");
                }
        }
        if (m && sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "Get") && F.get_errors > 0) {
                F.get_errors--;
                return sd_bus_error_setf(error, "org.freedesktop.DBus.Error.LimitsExceeded", "busy");
        }
        if (sd_bus_path_decode(path, "/org/freedesktop/systemd1/unit", &name) <= 0)
                return 0;
        u = fake_find(name);
        free(name);
        if (!u)
                return 0;
        *found = u;
        return 1;
}

/* No assertion here: a failure in this thread would not reach Criterion; the test
 * notices a manager that does not answer instead. */
static void *fake_run(void *arg) {
        sd_bus *bus = NULL;
        sd_id128_t id;

        if (sd_bus_new(&bus) < 0 || sd_bus_set_fd(bus, F.fd, F.fd) < 0 || sd_id128_randomize(&id) < 0 ||
            sd_bus_set_server(bus, 1, id) < 0 ||
            sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                     manager_vtable, NULL) < 0 ||
            sd_bus_add_fallback_vtable(bus, NULL, "/org/freedesktop/systemd1/unit", "org.freedesktop.systemd1.Unit",
                                       unit_vtable, find_unit, NULL) < 0 ||
            sd_bus_add_fallback_vtable(bus, NULL, "/org/freedesktop/systemd1/unit", "org.freedesktop.systemd1.Service",
                                       service_vtable, find_unit, NULL) < 0 ||
            sd_bus_start(bus) < 0) {
                sd_bus_close_unref(bus);
                return NULL;
        }
        while (!F.stop) {
                int r = sd_bus_process(bus, NULL);

                if (r < 0)
                        break;
                if (r == 0)
                        (void)sd_bus_wait(bus, 20000);
        }
        sd_bus_close_unref(bus); /* no flush: it would wait for a peer that never authenticated */
        return NULL;
}

/* ---- the daemon's side ---- */

static struct logger log_;
static struct event_base *base;
static struct bus *B;
static int client_fd = -1;

static void start_fake(void) {
        int pair[2];

        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        F.fd = pair[1];
        client_fd = pair[0];
        cr_assert_eq(pthread_create(&F.thread, NULL, fake_run, NULL), 0);
}

static void stop_fake(void) {
        if (F.fd < 0)
                return;
        F.stop = true;
        pthread_join(F.thread, NULL);
        F.fd = -1;
}

static void setup(void) {
        log_capture_start();
        logger_init(&log_, LOG_DEBUG);
        base = loop_start();
}

static void teardown(void) {
        if (!B && client_fd >= 0)
                close(client_fd); /* bus_open_fd() owns it otherwise */
        client_fd = -1;
        B = bus_free(B);
        stop_fake();
        loop_stop();
        log_capture_stop();
        tmpdir_remove();
}

TestSuite(bus, .init = setup, .fini = teardown, .timeout = 30);

/* The fake manager, and the daemon's connection to it. */
static void open_bus(void) {
        char *error = NULL;

        start_fake();
        cr_assert_eq(bus_open_fd(base, &log_, client_fd, MANAGER_SYSTEM, &B, &error), 0, "%s", error);
        cr_assert_eq(F.subscribes, 1, "subscribed at start-up");
        cr_assert_eq(bus_manager(B), MANAGER_SYSTEM);
        cr_assert_not(bus_can_add_ref(B), "a direct connection cannot be tracked");
}

/* The unit of server "s" ({"command": "/bin/true"} and entry), run 1. */
static struct config C;

static void properties(const char *entry, int out_fd, struct unit_properties *ret) {
        struct config_problems p = { 0 };
        char text[512], *error = NULL;
        struct unit_input in;

        snprintf(text, sizeof text, "{\"mcpServers\":{\"s\":{\"command\":\"/bin/true\"%s%s}}}", entry[0] ? "," : "", entry);
        config_done(&C);
        cr_assert_eq(config_parse(text, strlen(text), &C, &p), 0);
        problems_done(&p);
        in = (struct unit_input){ .server = config_find_server(&C, "s"), .manager = MANAGER_SYSTEM, .run = 1,
                                  .program = "/bin/true", .daemon_id = "/run/test.sock", .stdio = { -1, out_fd, -1 } };
        cr_assert_eq(unit_properties_build(&in, ret, &error), 0, "%s", error);
}

/* What the callbacks heard. */
static struct {
        unsigned started, done, reads, changes, lost;
        char job[128], result[64], error[256], active[32], sub[32], unit_result[32], cgroup[128];
        int code, status;
        unsigned pid, has;
        struct bus_call *cancel_in_callback;
        struct bus_watch *free_in_callback;
} H;

static void on_started(const char *job, const char *result, const char *error, void *userdata) {
        H.started++;
        snprintf(H.job, sizeof H.job, "%s", job ? job : "");
        snprintf(H.result, sizeof H.result, "%s", result ? result : "");
        snprintf(H.error, sizeof H.error, "%s", error ? error : "");
}

static void on_done(const char *error, void *userdata) {
        H.done++;
        snprintf(H.error, sizeof H.error, "%s", error ? error : "");
}

static void note_status(const struct bus_unit_status *st) {
        if (st->active_state)
                snprintf(H.active, sizeof H.active, "%s", st->active_state);
        if (st->sub_state)
                snprintf(H.sub, sizeof H.sub, "%s", st->sub_state);
        if (st->result)
                snprintf(H.unit_result, sizeof H.unit_result, "%s", st->result);
        if (st->control_group)
                snprintf(H.cgroup, sizeof H.cgroup, "%s", st->control_group);
        if (st->has & BUS_HAS_EXEC_MAIN_CODE)
                H.code = st->exec_main_code;
        if (st->has & BUS_HAS_EXEC_MAIN_STATUS)
                H.status = st->exec_main_status;
        if (st->has & BUS_HAS_EXEC_MAIN_PID)
                H.pid = st->exec_main_pid;
        H.has |= st->has;
        snprintf(H.error, sizeof H.error, "%s", st->error ? st->error : "");
}

static void on_read(const struct bus_unit_status *st, void *userdata) {
        H.reads++;
        cr_assert_eq(strncmp(st->unit, "mcpvisor-", 9), 0, "%s", st->unit);
        note_status(st);
}

static void on_change(const struct bus_unit_status *st, void *userdata) {
        H.changes++;
        cr_assert_str_eq(st->unit, "mcpvisor-s@23bba356-1.service");
        note_status(st);
        if (H.free_in_callback)
                bus_watch_free(TAKE_PTR(H.free_in_callback));
}

static void on_lost(void *userdata) {
        H.lost++;
}

/* ---- tests ---- */

Test(bus, which_manager) {
        char runtime[300], *address, sock[400];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        cr_assert_eq(bus_manager_kind((char *[]){ "PATH=/bin", NULL }, 0), MANAGER_SYSTEM);
        cr_assert_eq(bus_manager_kind((char *[]){ "MANAGERPID=1234", NULL }, 0), MANAGER_USER);
        cr_assert_eq(bus_manager_kind((char *[]){ "MANAGERPID=1234", NULL }, 1000), MANAGER_USER);
        cr_assert_eq(bus_manager_kind(NULL, 0), MANAGER_SYSTEM);
        cr_assert_eq(bus_manager_kind(NULL, 998), MANAGER_USER,
                     "an unprivileged system service: its own user's manager, never the system bus (polkit)");

        snprintf(runtime, sizeof runtime, "XDG_RUNTIME_DIR=%s", tmpdir_make());
        cr_assert_null(bus_private_address(MANAGER_USER, (char *[]){ runtime, NULL }, 1000), "no socket there");
        cr_assert_eq(mkdir(tmp_path("systemd"), 0700), 0);
        snprintf(sock, sizeof sock, "%s/systemd/private", tmpdir_make());
        cr_assert_lt(strlen(sock), sizeof sa.sun_path);
        memcpy(sa.sun_path, sock, strlen(sock) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        address = bus_private_address(MANAGER_USER, (char *[]){ runtime, NULL }, 1000);
        cr_assert_not_null(address);
        cr_assert_eq(strncmp(address, "unix:path=", 10), 0);
        cr_assert_str_eq(address + 10, sock);
        free(address);
        close(fd);
        cr_assert_null(bus_private_address(MANAGER_USER, (char *[]){ "XDG_RUNTIME_DIR=relative", NULL }, 1000));
        cr_assert_null(bus_private_address(MANAGER_USER, NULL, 3999999999u), "/run/user/3999999999/systemd/private: none");
        cr_assert_null(bus_private_address(MANAGER_SYSTEM, NULL, 1000), "the system manager's is root's only");
}

/* "auto" without a service manager, or without one to reach: exec, said once. */
Test(bus, auto_falls_back_to_exec) {
        struct bus *b = (struct bus *)1;

        cr_assert_eq(bus_open_auto(base, &log_, (char *[]){ "PATH=/bin", NULL }, &b), LAUNCHER_EXEC);
        cr_assert_null(b);
        cr_assert(strstr(logged(), "launcher \"auto\": mcpvisord was not started by a service manager"), "%s", logged());

        cr_assert_eq(setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus", 1), 0);
        cr_assert_eq(bus_open_auto(base, &log_,
                                   (char *[]){ "INVOCATION_ID=0123456789abcdef", "MANAGERPID=1", "XDG_RUNTIME_DIR=/nonexistent",
                                               NULL },
                                   &b),
                     LAUNCHER_EXEC);
        cr_assert_null(b);
        cr_assert(strstr(logged(), "launcher \"auto\": cannot connect to the user manager (the user bus)"), "%s", logged());
}

/* An unprivileged daemon the system manager started (no MANAGERPID) never tries the
 * system bus: its own user's manager, and without one, exec, saying how to get one. */
Test(bus, auto_unprivileged_without_its_user_manager) {
        struct bus *b = (struct bus *)1;
        char expect[256];

        if (geteuid() == 0)
                cr_assert_eq(setresuid(65534, 65534, 65534), 0, "becoming uid 65534: %s", strerror(errno));
        else if (access("/run/user", F_OK) == 0 && bus_private_address(MANAGER_USER, NULL, geteuid()))
                cr_skip_test("this user's manager runs");
        cr_assert_eq(bus_open_auto(base, &log_, (char *[]){ "INVOCATION_ID=0123456789abcdef", "PATH=/bin", NULL }, &b),
                     LAUNCHER_EXEC);
        cr_assert_null(b);
        snprintf(expect, sizeof expect, "launcher \"auto\": cannot reach the user manager of ");
        cr_assert(strstr(logged(), expect), "%s", logged());
        snprintf(expect, sizeof expect, "no /run/user/%u/systemd/private (user@%u.service does not run: loginctl enable-linger ",
                 (unsigned)geteuid(), (unsigned)geteuid());
        cr_assert(strstr(logged(), expect), "%s", logged());
        cr_assert_null(strstr(logged(), "system bus"), "%s", logged());
}

/* A start completes with its job; its properties and descriptors reach the manager. */
Test(bus, start_transient_unit) {
        struct unit_properties p;
        char buf[16] = "";
        int out[2];

        open_bus();
        open_pipe(out, 0);
        properties("\"memoryMax\":\"1G\"", out[1], &p);
        cr_assert_eq(bus_start_transient_unit(B, &p, on_started, NULL, NULL), 0);
        close(out[1]);
        unit_properties_done(&p);
        WAIT_UNTIL(H.started == 1);
        cr_assert_str_eq(H.error, "");
        cr_assert_str_eq(H.job, "/org/freedesktop/systemd1/job/1");
        cr_assert_str_eq(H.result, "done");
        cr_assert_str_eq(F.start_unit, "mcpvisor-s@23bba356-1.service");
        cr_assert_str_eq(F.start_mode, "fail");
        cr_assert_str_eq(F.exec_path, "/bin/true");
        cr_assert(strstr(F.property_names, " MemoryMax "), "%s", F.property_names);
        cr_assert(strstr(F.property_names, "StandardOutputFileDescriptor"), "%s", F.property_names);
        cr_assert_eq(read(out[0], buf, sizeof buf - 1), 5, "the descriptor passed is the pipe's");
        cr_assert_str_eq(buf, "hello");
        close(out[0]);
}

Test(bus, start_refused) {
        struct unit_properties p;

        open_bus();
        F.fail_start = true;
        properties("", -1, &p);
        cr_assert_eq(bus_start_transient_unit(B, &p, on_started, NULL, NULL), 0);
        unit_properties_done(&p);
        WAIT_UNTIL(H.started == 1);
        cr_assert_str_eq(H.error, "Unit mcpvisor-s@23bba356-1.service already exists.");
        cr_assert_str_eq(H.job, "");
}

/* A unit's changes reach its watch; a property only invalidated is read. */
Test(bus, watch_and_stop) {
        struct unit_properties p;
        struct bus_watch *w = NULL;

        open_bus();
        cr_assert_eq(bus_watch_unit(B, "mcpvisor-s@23bba356-1.service", on_change, NULL, &w), 0);
        cr_assert_eq(bus_watch_unit(B, "mcpvisor-s@23bba356-1.service", on_change, NULL, NULL), -EEXIST);
        properties("", -1, &p);
        cr_assert_eq(bus_start_transient_unit(B, &p, on_started, NULL, NULL), 0);
        unit_properties_done(&p);
        WAIT_UNTIL(H.started == 1 && strcmp(H.active, "active") == 0);
        cr_assert_str_eq(H.sub, "running");

        H.unit_result[0] = '\0';
        cr_assert_eq(bus_stop_unit(B, "mcpvisor-s@23bba356-1.service", on_done, NULL, NULL), 0);
        WAIT_UNTIL(H.done == 1 && strcmp(H.active, "inactive") == 0 && H.code == CLD_KILLED && H.unit_result[0]);
        cr_assert_str_eq(H.error, "");
        cr_assert_str_eq(H.sub, "dead");
        cr_assert_eq(H.code, CLD_KILLED);
        cr_assert_eq(H.status, SIGTERM);
        cr_assert_str_eq(H.unit_result, "success", "read, as the manager only invalidated it");
        cr_assert_str_eq(F.stopped, "mcpvisor-s@23bba356-1.service ");

        /* freed from its own callback: nothing more arrives */
        H.free_in_callback = w;
        unsigned changes = H.changes;
        cr_assert_eq(bus_stop_unit(B, "mcpvisor-s@23bba356-1.service", on_done, NULL, NULL), 0);
        WAIT_UNTIL(H.done == 2);
        run_for(100000);
        cr_assert_eq(H.changes, changes + 1);
}

Test(bus, read_kill_unref) {
        struct unit_properties p;

        open_bus();
        properties("", -1, &p);
        cr_assert_eq(bus_start_transient_unit(B, &p, on_started, NULL, NULL), 0);
        unit_properties_done(&p);
        WAIT_UNTIL(H.started == 1);
        cr_assert_eq(bus_read_unit(B, "mcpvisor-s@23bba356-1.service", on_read, NULL, NULL), 0);
        WAIT_UNTIL(H.reads == 1);
        cr_assert_str_eq(H.error, "");
        cr_assert_str_eq(H.active, "active");
        cr_assert_str_eq(H.unit_result, "success");
        cr_assert_str_eq(H.cgroup, "/mcpvisor.slice/x.service");
        cr_assert_eq(H.pid, 4242);
        cr_assert_eq(H.has, BUS_HAS_EXEC_MAIN_CODE | BUS_HAS_EXEC_MAIN_STATUS | BUS_HAS_EXEC_MAIN_PID);

        cr_assert_eq(bus_kill_unit(B, "mcpvisor-s@23bba356-1.service", SIGKILL, on_done, NULL, NULL), 0);
        WAIT_UNTIL(H.done == 1);
        cr_assert_eq(F.kill_signal, SIGKILL);
        cr_assert_str_eq(F.kill_who, "all");
        cr_assert_eq(bus_unref_unit(B, "mcpvisor-s@23bba356-1.service", on_done, NULL, NULL), 0);
        WAIT_UNTIL(H.done == 2);
        cr_assert_eq(F.unrefs, 1);

        /* a unit the manager does not know */
        cr_assert_eq(bus_read_unit(B, "mcpvisor-gone@1.service", on_read, NULL, NULL), 0);
        WAIT_UNTIL(H.reads == 2);
        cr_assert_neq(H.error[0], '\0', "an error, not an empty state");
}

/* A call cancelled is never answered to its owner. */
Test(bus, cancel) {
        struct unit_properties p;
        struct bus_call *c = NULL;

        open_bus();
        properties("", -1, &p);
        cr_assert_eq(bus_start_transient_unit(B, &p, on_started, NULL, &c), 0);
        unit_properties_done(&p);
        cr_assert_not_null(c);
        bus_call_cancel(c);
        cr_assert_eq(bus_stop_unit(B, "mcpvisor-x@1.service", on_done, NULL, &c), 0);
        bus_call_cancel(c);
        bus_call_cancel(NULL);
        WAIT_UNTIL(F.starts == 1 && F.stops == 1);
        run_for(100000);
        cr_assert_eq(H.started, 0);
        cr_assert_eq(H.done, 0);
}

/* The manager gone: the start waiting for its job hears it, then the owner. */
Test(bus, connection_lost) {
        struct unit_properties p;

        open_bus();
        bus_set_lost(B, on_lost, NULL);
        F.hold_job = true;
        properties("", -1, &p);
        cr_assert_eq(bus_start_transient_unit(B, &p, on_started, NULL, NULL), 0);
        unit_properties_done(&p);
        WAIT_UNTIL(F.starts == 1);
        run_for(50000);
        cr_assert_eq(H.started, 0, "waiting for JobRemoved");
        stop_fake();
        WAIT_UNTIL(H.lost == 1);
        cr_assert_eq(H.started, 1);
        cr_assert_str_eq(H.error, "lost the connection to the service manager");
        cr_assert(strstr(logged(), "lost the connection to the service manager"), "%s", logged());
        cr_assert_eq(bus_stop_unit(B, "mcpvisor-s@23bba356-1.service", on_done, NULL, NULL), -ENOTCONN);
}

/* At start-up: a dead predecessor's units (its marker) are stopped, nobody else's. */
Test(bus, stop_leftovers) {
        char *error = NULL;

        pthread_mutex_lock(&F.lock);
        fake_add("mcpvisor-a@1.service")->env[0] = "MCPVISOR_DAEMON=/run/test.sock";
        fake_add("mcpvisor-b@2.service")->env[0] = "MCPVISOR_DAEMON=/run/other.sock";
        fake_add("mcpvisor-c@3.service")->env[0] = "PATH=/bin";
        F.units[2].env[1] = "MCPVISOR_DAEMON=/run/test.sock.old";
        fake_add("mcpvisor-d@4.service");
        F.units[3].env[0] = "X=1";
        F.units[3].env[1] = "MCPVISOR_DAEMON=/run/test.sock";
        pthread_mutex_unlock(&F.lock);
        open_bus();
        int stopped = bus_stop_leftovers(B, "/run/test.sock", &error);
        cr_assert_eq(stopped, 2, "%d: %s (%s)", stopped, error ? error : "", F.stopped);
        cr_assert_str_eq(F.stopped, "mcpvisor-a@1.service mcpvisor-d@4.service ");
        cr_assert_str_eq(F.list_pattern, "|mcpvisor-*@*.service", "every state, our units only");
        /* it waited until they were collected: the next start may reuse their names */
        cr_assert(F.units[0].collected && F.units[3].collected && !F.units[1].collected);
        cr_assert_eq(bus_stop_leftovers(B, "/run/none.sock", &error), 0);
        cr_assert_null(error);
}

/* A unit's environment the manager cannot give now is asked again (3 tries), then the
 * start-up says which unit it could not tell; never taken for "not ours". */
Test(bus, stop_leftovers_read_errors) {
        char *error = NULL;

        pthread_mutex_lock(&F.lock);
        fake_add("mcpvisor-a@1.service")->env[0] = "MCPVISOR_DAEMON=/run/test.sock";
        pthread_mutex_unlock(&F.lock);
        open_bus();
        F.get_errors = 2;
        cr_assert_eq(bus_stop_leftovers(B, "/run/test.sock", &error), 1, "%s", error ? error : "");
        cr_assert_str_eq(F.stopped, "mcpvisor-a@1.service ");

        pthread_mutex_lock(&F.lock);
        fake_add("mcpvisor-b@2.service")->env[0] = "MCPVISOR_DAEMON=/run/test.sock";
        pthread_mutex_unlock(&F.lock);
        F.get_errors = 3;
        cr_assert_lt(bus_stop_leftovers(B, "/run/test.sock", &error), 0);
        cr_assert_str_eq(error, "cannot read the environment of mcpvisor-b@2.service: busy");
        free(error);
}

/* ---- the systemd launcher (launcher-systemd.c) over the fake manager ---- */

/* What launcher-systemd.c reports through instance.c, heard here instead of a server's. */
static unsigned ended_runs;

void run_ended(struct run *in) {
        in->ended = true;
        ended_runs++;
}

struct event_base *run_event_base(const struct run *in) {
        return base;
}

/* The systemd launcher's daemon-wide part, kept here instead of in a supervisor. */
static struct run_systemd *systemd_part;

void **run_launcher_part_of(const struct run *in) {
        return (void **)&systemd_part;
}

static struct supervisor SV;
static struct server SRV;
static struct run IN;
static int daemon_ends[3] = { -1, -1, -1 }; /* the daemon's ends of the run's pipes */
static uint64_t call_timeout_usec; /* of the daemon's calls, when set */

/* Run 1 of server "s" ({"command": "/bin/true"} and entry) started by the launcher. */
static void launch(const char *entry) {
        struct config_problems p = { 0 };
        char text[512], *error = NULL, *env[] = { "PATH=/usr/bin:/bin", NULL };
        int in[2], out[2], err[2];

        open_bus();
        if (call_timeout_usec)
                cr_assert_eq(bus_set_call_timeout(B, call_timeout_usec), 0);
        snprintf(text, sizeof text, "{\"mcpServers\":{\"s\":{\"command\":\"/bin/true\"%s%s}}}", entry[0] ? "," : "", entry);
        config_done(&C);
        cr_assert_eq(config_parse(text, strlen(text), &C, &p), 0);
        problems_done(&p);
        SV = (struct supervisor){ .base = base, .log = &log_, .daemon_env = env, .daemon_id = "/run/test.sock" };
        cr_assert_eq(run_systemd_new(B, &log_, &systemd_part), 0);
        SRV = (struct server){ .sv = &SV, .config = (struct server_config *)config_find_server(&C, "s") };
        IN = (struct run){ .server = &SRV, .number = 1, .ops = &run_systemd_ops };
        open_pipe(in, 0);
        open_pipe(out, 0);
        open_pipe(err, 0);
        cr_assert_eq(run_systemd_ops.start(&IN, SRV.config, env, &(struct run_stdio){ in[0], out[1], err[1] }, &error), 0,
                     "%s", error ? error : "");
        /* kept: the fake writes to the unit's stdout */
        daemon_ends[0] = in[1];
        daemon_ends[1] = out[0];
        daemon_ends[2] = err[0];
        WAIT_UNTIL(F.starts == 1);
        run_for(100000);
}

static void finish(void) {
        for (int k = 0; k < 3; k++)
                if (daemon_ends[k] >= 0)
                        close(TAKE_FD(daemon_ends[k]));
        if (IN.launcher)
                run_systemd_ops.free(&IN);
        run_systemd_free(systemd_part);
        systemd_part = NULL;
}

/* How the launcher says the run ended, once it has. */
static struct server_exit end_of_the_run(void) {
        struct server_exit e;

        WAIT_UNTIL(ended_runs == 1);
        run_systemd_ops.describe_end(&IN, &e);
        return e;
}

/* The run ends, killed by sig, in these words ("" for none: code and status say it). */
static void expect_killed(int sig, const char *reason) {
        struct server_exit e = end_of_the_run();

        cr_assert_eq(e.code, CLD_KILLED);
        cr_assert_eq(e.status, sig);
        cr_assert_str_eq(e.reason ? e.reason : "", reason);
        server_exit_done(&e);
}

/* Result=oom-kill is said as the OOM killer's, with the server's memoryMax. */
Test(bus, launcher_oom_kill) {
        struct run_usage u;

        launch("\"memoryMax\":\"256M\"");
        cr_assert_eq(ended_runs, 0, "running");
        run_systemd_ops.usage(&IN, &u);
        cr_assert_str_eq(u.unit, "mcpvisor-s@23bba356-1.service");
        snprintf(F.kill_result, sizeof F.kill_result, "oom-kill");
        cr_assert_eq(run_systemd_ops.kill(&IN), 0);
        expect_killed(SIGKILL, "killed by the OOM killer (memoryMax 256M)");
        cr_assert_str_eq(F.kill_who, "all");
        cr_assert_eq(F.kill_signal, SIGKILL);
        cr_assert_eq(run_systemd_ops.terminate(&IN), -ESRCH, "ended");
        finish();
}

/* Under the system manager a unit runs as the daemon's user, root's included: the manager
 * sets HOME (and USER, LOGNAME, SHELL) only for a unit with User=, and without it a root
 * daemon's servers had no HOME at all. */
Test(bus, launcher_unit_user_is_the_daemons) {
        struct passwd *pw = getpwuid(geteuid());

        cr_assert_not_null(pw);
        launch("");
        cr_assert_str_eq(F.user, pw->pw_name, "User= of a daemon running as %s", pw->pw_name);
        finish();
}

/* The last read after the end finds the unit collected: systemd answers with a "not-found"
 * stub's zeros, which must not replace what the signals said (it was "exit status 255"). */
Test(bus, launcher_end_read_from_a_collected_unit) {
        launch("");
        F.stub_after_kill = true;
        snprintf(F.kill_result, sizeof F.kill_result, "signal");
        cr_assert_eq(run_systemd_ops.kill(&IN), 0);
        expect_killed(SIGKILL, "");
        finish();
}

/* StopUnit ends it by SIGTERM: code and status as exec would say them, no reason. */
Test(bus, launcher_stop) {
        launch("");
        cr_assert_eq(run_systemd_ops.terminate(&IN), 0);
        expect_killed(SIGTERM, "");
        finish();
}

/* A start the manager refuses is the run's end, naming the unit and the manager's error. */
Test(bus, launcher_start_refused) {
        struct server_exit e;

        F.fail_start = true;
        launch("");
        e = end_of_the_run();
        cr_assert_str_eq(e.reason, "the service manager did not start unit mcpvisor-s@23bba356-1.service: "
                                   "Unit mcpvisor-s@23bba356-1.service already exists.");
        cr_assert_not(server_exit_clean(&e));
        finish();
}

/* The connection lost: every run ends, saying so. */
Test(bus, launcher_connection_lost) {
        launch("");
        stop_fake();
        cr_assert_str_eq(end_of_the_run().reason, "lost the connection to the service manager that runs its unit mcpvisor-s@23bba356-1.service");
        finish();
}

/* A read the manager answers with an error other than "no such unit" says nothing of the
 * unit: read again later, the run goes on (it was taken for the unit's end). */
Test(bus, launcher_read_error_is_retried) {
        snprintf(F.read_error, sizeof F.read_error, "org.freedesktop.DBus.Error.LimitsExceeded");
        F.read_errors = 2; /* the launcher's read after the start, or the watch's */
        launch("");
        WAIT_UNTIL(F.reads >= 3 && F.read_errors == 0);
        run_for(100000);
        cr_assert_eq(ended_runs, 0, "still running: the errors said nothing of the unit");
        cr_assert(strstr(logged(), "reading its state failed (the fake manager refuses this read): again in 0.1 s"), "%s",
                  logged());
        cr_assert_eq(run_systemd_ops.terminate(&IN), 0);
        expect_killed(SIGTERM, "");
        finish();
}

/* The manager knows no such unit: it is gone, and the run with it. */
Test(bus, launcher_read_not_found_ends_the_run) {
        snprintf(F.read_error, sizeof F.read_error, "org.freedesktop.systemd1.NoSuchUnit");
        F.read_errors = 100;
        launch("");
        cr_assert_str_eq(end_of_the_run().reason, "its unit mcpvisor-s@23bba356-1.service is gone (the fake manager refuses this read)");
        cr_assert_null(strstr(logged(), "again in"), "not asked again: %s", logged());
        cr_assert_eq(F.stops, 0);
        finish();
}

/* Reads failing on and on: the run is given up after 6 (3.1 s), its unit stopped since it
 * may still run. */
Test(bus, launcher_read_errors_give_up) {
        struct server_exit e;

        snprintf(F.read_error, sizeof F.read_error, "org.freedesktop.DBus.Error.AccessDenied");
        F.read_errors = 100;
        launch("");
        WAIT_UNTIL(ended_runs == 1);
        cr_assert_geq(F.reads, 6, "the launcher's 6, and the watch's own");
        WAIT_UNTIL(F.stops == 1); /* stopped */
        cr_assert_str_eq(F.stopped, "mcpvisor-s@23bba356-1.service ");
        run_systemd_ops.describe_end(&IN, &e);
        cr_assert_str_eq(e.reason, "the service manager did not say how its unit mcpvisor-s@23bba356-1.service is "
                                   "(the fake manager refuses this read)");
        cr_assert(strstr(logged(), "cannot read the state of unit mcpvisor-s@23bba356-1.service (the fake manager refuses "
                                   "this read): stopping it"),
                  "%s", logged());
        finish();
}

/* No answer to StartTransientUnit in time: the unit may have started, so it is stopped,
 * and the run ends when the manager says it is inactive. */
Test(bus, launcher_start_unanswered_stops_the_unit) {
        struct server_exit e;

        call_timeout_usec = 200000;
        F.drop_start_reply = true;
        launch("");
        e = end_of_the_run();
        cr_assert_eq(F.stops, 1);
        cr_assert_str_eq(F.stopped, "mcpvisor-s@23bba356-1.service ");
        cr_assert(F.units[0].collected, "no unit left");
        cr_assert_eq(e.code, CLD_KILLED, "it had started: the stop ended it");
        cr_assert_eq(e.status, SIGTERM);
        cr_assert(strstr(e.reason, "the service manager did not answer the start of unit mcpvisor-s@23bba356-1.service ("),
                  "%s", e.reason);
        cr_assert(strstr(e.reason, "); stopped, in case it started"), "%s", e.reason);
        finish();
}

/* At exit without the loop: kill_wait returns once the manager collected the unit, not
 * before, and the run's end is not reported. */
Test(bus, launcher_kill_wait_waits_until_collected) {
        launch("");
        F.collect_delay = 3;
        F.lists = 0;
        run_systemd_ops.kill_wait(&IN);
        cr_assert_eq(F.kills, 1);
        cr_assert_eq(F.kill_signal, SIGKILL);
        cr_assert_eq(F.stops, 1);
        cr_assert(F.units[0].collected, "kill_wait returned before the unit was collected");
        cr_assert_eq(F.lists, 3, "listed until it was gone");
        cr_assert_eq(ended_runs, 0, "its end is not reported");
        cr_assert_eq(run_systemd_ops.terminate(&IN), -ESRCH);
        run_systemd_ops.kill_wait(&IN); /* once */
        cr_assert_eq(F.kills, 1);
        finish();
}
