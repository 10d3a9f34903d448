/* Unit tests for unit-properties.c: the transient unit of a server's start, per preset and
 * per key, and its a(sv) form with the D-Bus type systemd reads each property in. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "environment.h"
#include "macro.h"
#include "run-as.h"
#include "settings.h"
#include "unit-properties.h"

#define HELPER "/usr/libexec/mcpvisor/mcpvisor-exec-credentials"

static struct config C;
static struct config_problems P;
static struct unit_properties U;
static char *error;
static char *daemon_env[] = { "PATH=/usr/local/bin:/usr/bin", "HOME=/var/lib/mcpvisor", "LANG=C.UTF-8", "SECRET=x", NULL };

static void done(void) {
        unit_properties_done(&U);
        config_done(&C);
        problems_done(&P);
        free(error);
        error = NULL;
}

TestSuite(unit_properties, .fini = done);

/* The server "s" of {"command": "npx", "args": ["-y", "pkg"], entry...}. */
static const struct server_config *server(const char *entry) {
        char text[2048];

        done();
        snprintf(text, sizeof text, "{\"mcpServers\":{\"s\":{\"command\":\"npx\",\"args\":[\"-y\",\"pkg\"]%s%s}}}",
                 entry[0] ? "," : "", entry);
        memset(&P, 0, sizeof P);
        cr_assert_eq(config_parse(text, strlen(text), &C, &P), 0, "%s", text);
        cr_assert_eq(P.errors, 0, "%s: %s", text, P.count ? P.items[0].message : "");
        cr_assert_not_null(config_find_server(&C, "s"), "%s", text);
        return config_find_server(&C, "s");
}

static struct unit_input input(const struct server_config *s, enum manager_kind manager) {
        return (struct unit_input){
                .server = s,
                .manager = manager,
                .daemon_id = "/run/mcpvisor/mcp.sock",
                .run = 7,
                .program = "/usr/bin/npx",
                .daemon_env = daemon_env,
                .credentials_dir = "/run/credentials/mcpvisor.service",
                .credential_helper = HELPER,
                .default_user = "mcpvisor",
                .stdio = { -1, -1, -1 },
        };
}

static void build(const char *entry, enum manager_kind manager) {
        struct unit_input in = input(server(entry), manager);

        cr_assert_eq(unit_properties_build(&in, &U, &error), 0, "%s: %s", entry, error ? error : "-");
}

static const struct unit_property *prop(const char *name, enum unit_property_type type) {
        const struct unit_property *u = unit_properties_find(&U, name);

        cr_assert_not_null(u, "no %s", name);
        cr_assert_eq(u->type, type, "%s has type %d", name, u->type);
        return u;
}

static void expect_string(const char *name, const char *value) {
        cr_assert_str_eq(prop(name, UNIT_PROPERTY_STRING)->string, value, "%s", name);
}

static void expect_bool(const char *name, bool value) {
        cr_assert_eq(prop(name, UNIT_PROPERTY_BOOL)->flag, value, "%s", name);
}

static void expect_number(const char *name, enum unit_property_type type, uint64_t value) {
        cr_assert_eq(prop(name, type)->number, value, "%s: %" PRIu64, name, prop(name, type)->number);
}

static void expect_strv(const char *name, enum unit_property_type type, const char *const *values) {
        char **strv = prop(name, type)->strv;
        size_t i = 0;

        for (; values[i]; i++)
                cr_assert_str_eq(strv[i], values[i], "%s[%zu]", name, i);
        cr_assert_null(strv[i], "%s has more than %zu items: %s", name, i, strv[i]);
}

static void expect_absent(const char *name) {
        cr_assert_null(unit_properties_find(&U, name), "%s is set", name);
}

static const char *env_of(const char *name) {
        return environment_get(prop("Environment", UNIT_PROPERTY_STRV)->strv, name);
}

/* Every property of "strict" but ProtectSystem= and ProtectHome=. */
static const char *const shared_preset[] = {
        "PrivateTmp", "PrivateDevices", "NoNewPrivileges", "CapabilityBoundingSet", "AmbientCapabilities",
        "RestrictSUIDSGID", "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
        "ProtectControlGroups", "LockPersonality", "RestrictRealtime", "SystemCallFilter", "SystemCallArchitectures", "UMask",
};

static void expect_shared_preset(void) {
        static const char *const on[] = { "PrivateTmp", "PrivateDevices", "NoNewPrivileges", "RestrictSUIDSGID",
                                          "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
                                          "ProtectControlGroups", "LockPersonality", "RestrictRealtime" };

        for (size_t i = 0; i < ARRAY_SIZE(on); i++)
                expect_bool(on[i], true);
        expect_number("CapabilityBoundingSet", UNIT_PROPERTY_U64, 0);
        expect_number("AmbientCapabilities", UNIT_PROPERTY_U64, 0);
        expect_strv("SystemCallFilter", UNIT_PROPERTY_LIST, (const char *const[]){ "@system-service", NULL });
        cr_assert(prop("SystemCallFilter", UNIT_PROPERTY_LIST)->flag, "an allow-list");
        expect_strv("SystemCallArchitectures", UNIT_PROPERTY_STRV, (const char *const[]){ "native", NULL });
        expect_number("UMask", UNIT_PROPERTY_U32, 0077);
        expect_absent("MemoryDenyWriteExecute");
}

Test(unit_properties, names) {
        char *name = NULL;

        cr_assert_eq(unit_name("github", "/run/mcpvisor/mcp.sock", 3, &name), 0);
        cr_assert_str_eq(name, "mcpvisor-github@106bb1be-3.service", "the daemon's tag: FNV-1a of its socket's path");
        free(name);
        cr_assert_eq(unit_name("github", "/run/test.sock", 3, &name), 0);
        cr_assert_str_eq(name, "mcpvisor-github@23bba356-3.service", "another daemon on the manager: another name");
        free(name);
        cr_assert_eq(unit_name("github", NULL, 3, &name), 0);
        cr_assert_str_eq(name, "mcpvisor-github@3.service", "no socket, no tag");
        free(name);
        cr_assert_eq(unit_name("a.b-c_D", "/x", 18446744073709551615ull, &name), 0);
        cr_assert_eq(strncmp(name, "mcpvisor-a.b-c_D@", 17), 0, "%s", name);
        cr_assert_str_eq(name + 17 + 9, "18446744073709551615.service");
        free(name);
        cr_assert_eq(unit_name("a b", NULL, 1, &name), -EINVAL, "not a server's name: no escaping is done");
        cr_assert_eq(unit_name("a/b", "/x", 1, &name), -EINVAL);
        cr_assert_eq(unit_name("", NULL, 1, &name), -EINVAL);
}

/* The default: the "basic" preset, the network, no limits, the daemon's user. */
Test(unit_properties, defaults_under_the_system_manager) {
        build("", MANAGER_SYSTEM);
        cr_assert_str_eq(U.unit, "mcpvisor-s@106bb1be-7.service");
        expect_string("Description", "MCP server s (mcpvisor)");
        expect_string("Type", "exec");
        expect_string("Slice", "mcpvisor.slice");
        expect_string("CollectMode", "inactive-or-failed");
        expect_string("KillMode", "control-group");
        expect_number("TimeoutStopUSec", UNIT_PROPERTY_U64, 3000000);
        expect_bool("SendSIGKILL", true);
        expect_string("SyslogIdentifier", "s");
        expect_bool("DefaultDependencies", false);
        expect_strv("Conflicts", UNIT_PROPERTY_STRV, (const char *const[]){ "shutdown.target", NULL });
        expect_strv("Before", UNIT_PROPERTY_STRV, (const char *const[]){ "shutdown.target", NULL });
        cr_assert_str_eq(prop("ExecStartEx", UNIT_PROPERTY_EXEC)->string, "/usr/bin/npx");
        expect_strv("ExecStartEx", UNIT_PROPERTY_EXEC, (const char *const[]){ "npx", "-y", "pkg", NULL });
        expect_string("User", "mcpvisor");
        cr_assert_str_eq(env_of("PATH"), "/usr/local/bin:/usr/bin");
        cr_assert_str_eq(env_of("LANG"), "C.UTF-8");
        cr_assert_str_eq(env_of(ENV_SERVER), "s");
        cr_assert_str_eq(env_of(ENV_INSTANCE), "7");
        cr_assert_str_eq(env_of(ENV_DAEMON), "/run/mcpvisor/mcp.sock", "how a next daemon finds leftovers");
        cr_assert_null(env_of("HOME"), "systemd sets the User='s own");
        cr_assert_null(env_of("SECRET"));
        expect_string("ProtectSystem", "full");
        expect_absent("ProtectHome");
        expect_shared_preset();
        static const char *const absent[] = { "AddRef", "WorkingDirectory", "LoadCredential", "Group", "DynamicUser",
                                              "PrivateUsers", "PrivateNetwork", "RestrictAddressFamilies", "ReadWritePaths",
                                              "ReadOnlyPaths", "MemoryMax", "TasksMax", "CPUQuotaPerSecUSec",
                                              "StateDirectory", "StandardInputFileDescriptor",
                                              "StandardOutputFileDescriptor", "StandardErrorFileDescriptor" };
        for (size_t i = 0; i < ARRAY_SIZE(absent); i++)
                expect_absent(absent[i]);
}

Test(unit_properties, strict_preset) {
        build("\"sandbox\":\"strict\"", MANAGER_SYSTEM);
        expect_string("ProtectSystem", "strict");
        expect_string("ProtectHome", "read-only");
        expect_shared_preset();
}

Test(unit_properties, none_preset_sets_nothing) {
        build("\"sandbox\":\"none\"", MANAGER_SYSTEM);
        expect_absent("ProtectSystem");
        expect_absent("ProtectHome");
        for (size_t i = 0; i < ARRAY_SIZE(shared_preset); i++)
                expect_absent(shared_preset[i]);
        expect_string("User", "mcpvisor"); /* not a confinement: whom it runs as */
}

Test(unit_properties, every_key) {
        build("\"sandbox\":\"strict\",\"readWritePaths\":[\"/srv/data\",\"/var/tmp\"],\"readOnlyPaths\":[\"/srv/ro\"],"
              "\"network\":false,\"memoryMax\":\"256M\",\"tasksMax\":64,\"cpuQuota\":\"150%\",\"user\":\"mcp-fs\","
              "\"group\":\"mcp\",\"stateDirectory\":true",
              MANAGER_SYSTEM);
        expect_strv("ReadWritePaths", UNIT_PROPERTY_STRV, (const char *const[]){ "/srv/data", "/var/tmp", NULL });
        expect_strv("ReadOnlyPaths", UNIT_PROPERTY_STRV, (const char *const[]){ "/srv/ro", NULL });
        expect_bool("PrivateNetwork", true);
        expect_strv("RestrictAddressFamilies", UNIT_PROPERTY_LIST, (const char *const[]){ "AF_UNIX", NULL });
        cr_assert(prop("RestrictAddressFamilies", UNIT_PROPERTY_LIST)->flag, "AF_UNIX only, not all but it");
        expect_number("MemoryMax", UNIT_PROPERTY_U64, 256ull << 20);
        expect_number("TasksMax", UNIT_PROPERTY_U64, 64);
        expect_number("CPUQuotaPerSecUSec", UNIT_PROPERTY_U64, 1500000);
        expect_string("User", "mcp-fs");
        expect_string("Group", "mcp");
        expect_absent("DynamicUser");
        expect_strv("StateDirectory", UNIT_PROPERTY_STRV, (const char *const[]){ "mcpvisor/servers/s", NULL });
        expect_absent("PrivateUsers");

        build("\"dynamicUser\":true,\"memoryMax\":\"infinity\",\"stateDirectory\":\"mcpvisor/mem\"", MANAGER_SYSTEM);
        expect_bool("DynamicUser", true);
        expect_absent("User");
        expect_number("MemoryMax", UNIT_PROPERTY_U64, UINT64_MAX);
        expect_strv("StateDirectory", UNIT_PROPERTY_STRV, (const char *const[]){ "mcpvisor/mem", NULL });
        expect_absent("PrivateNetwork");

        build("\"group\":\"mcp\"", MANAGER_SYSTEM);
        expect_string("User", "mcpvisor");
        expect_string("Group", "mcp");
}

/* A root daemon leaves User= out: the unit runs as root, as its exec children did. */
Test(unit_properties, no_default_user) {
        struct unit_input in = input(server(""), MANAGER_SYSTEM);

        in.default_user = NULL;
        cr_assert_eq(unit_properties_build(&in, &U, &error), 0);
        expect_absent("User");
}

/* Under a user manager: its app slice, no User=, and a user namespace for the sandbox. */
Test(unit_properties, user_manager) {
        build("", MANAGER_USER);
        expect_string("Slice", "app-mcpvisor.slice");
        expect_absent("User");
        expect_bool("PrivateUsers", true);
        expect_string("ProtectSystem", "full");

        build("\"sandbox\":\"none\"", MANAGER_USER);
        expect_absent("PrivateUsers");
        build("\"sandbox\":\"none\",\"network\":false", MANAGER_USER);
        expect_bool("PrivateUsers", true);
        build("\"sandbox\":\"none\",\"readOnlyPaths\":[\"/srv\"]", MANAGER_USER);
        expect_bool("PrivateUsers", true);
        build("\"sandbox\":\"none\",\"memoryMax\":\"1G\",\"stateDirectory\":true", MANAGER_USER);
        expect_absent("PrivateUsers");
        expect_number("MemoryMax", UNIT_PROPERTY_U64, 1ull << 30);

        static const char *const refused[] = { "\"user\":\"nobody\"", "\"group\":\"nogroup\"", "\"dynamicUser\":true" };
        for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
                struct unit_input in = input(server(refused[i]), MANAGER_USER);

                cr_assert_eq(unit_properties_build(&in, &U, &error), -EINVAL, "%s", refused[i]);
                cr_assert_not_null(strstr(error, "needs the system service manager"), "%s", error);
                cr_assert_null(U.items, "nothing half-built is left");
                free(error);
                error = NULL;
        }
}

/* Secrets never become properties: LoadCredential= from the daemon's directory, and the
 * helper moves them into the environment. */
Test(unit_properties, credentials_through_the_helper) {
        build("\"env\":{\"GITHUB_TOKEN\":{\"credential\":\"gh\"},\"PLAIN\":\"v\",\"AGAIN\":{\"credential\":\"gh\"},"
              "\"API\":{\"credential\":\"api\"}}",
              MANAGER_SYSTEM);
        expect_strv("LoadCredential", UNIT_PROPERTY_PAIRS,
                    (const char *const[]){ "gh", "/run/credentials/mcpvisor.service/gh", "api",
                                           "/run/credentials/mcpvisor.service/api", NULL });
        cr_assert_str_eq(prop("ExecStartEx", UNIT_PROPERTY_EXEC)->string, HELPER);
        expect_strv("ExecStartEx", UNIT_PROPERTY_EXEC,
                    (const char *const[]){ "mcpvisor-exec-credentials", "GITHUB_TOKEN=gh", "AGAIN=gh", "API=api", "--",
                                           "/usr/bin/npx", "-y", "pkg", NULL });
        cr_assert_str_eq(env_of("PLAIN"), "v");
        cr_assert_null(env_of("GITHUB_TOKEN"));
        cr_assert_null(env_of("API"));
        cr_assert_null(env_of("CREDENTIALS_DIRECTORY"));

        struct unit_input in = input(server("\"env\":{\"T\":{\"credential\":\"t\"}}"), MANAGER_SYSTEM);
        in.credentials_dir = NULL;
        cr_assert_eq(unit_properties_build(&in, &U, &error), -EINVAL);
        cr_assert_str_eq(error, "env T needs credential 't', but the daemon has no credentials "
                                "(add LoadCredential=t:/path/to/secret to mcpvisor.service)");
        free(error);
        error = NULL;
        in.credentials_dir = "/run/credentials/x";
        in.credential_helper = NULL;
        cr_assert_eq(unit_properties_build(&in, &U, &error), -EINVAL);
        cr_assert_not_null(strstr(error, "mcpvisor-exec-credentials"), "%s", error);
}

/* What only the start knows: the descriptors, AddRef= over a broker, the cwd. */
Test(unit_properties, start_details) {
        struct unit_input in = input(server("\"cwd\":\"/srv/app\",\"killTimeout\":0"), MANAGER_SYSTEM);

        in.stdio[0] = 5;
        in.stdio[1] = 6;
        in.add_ref = true;
        in.program = "bin/server";
        cr_assert_eq(unit_properties_build(&in, &U, &error), 0, "%s", error ? error : "");
        cr_assert_eq(prop("StandardInputFileDescriptor", UNIT_PROPERTY_FD)->fd, 5);
        cr_assert_eq(prop("StandardOutputFileDescriptor", UNIT_PROPERTY_FD)->fd, 6);
        expect_absent("StandardErrorFileDescriptor");
        expect_bool("AddRef", true);
        expect_string("WorkingDirectory", "/srv/app");
        cr_assert_str_eq(prop("ExecStartEx", UNIT_PROPERTY_EXEC)->string, "/srv/app/bin/server", "ExecStart= takes an absolute path");
        expect_number("TimeoutStopUSec", UNIT_PROPERTY_U64, 1); /* killTimeout 0: SIGKILL at once, never infinity */

        unit_properties_done(&U);
        in = input(server(""), MANAGER_SYSTEM);
        in.program = "bin/server";
        cr_assert_eq(unit_properties_build(&in, &U, &error), -EINVAL);
        cr_assert_not_null(strstr(error, "relative path"), "%s", error);
}

static struct run_as alice = { .uid = 1000, .gid = 1000, .user = (char *)"alice", .home = (char *)"/home/alice" };

static void build_as(const char *entry, enum manager_kind manager, const struct run_as *as) {
        struct unit_input in = input(server(entry), manager);

        in.run_as = as;
        cr_assert_eq(unit_properties_build(&in, &U, &error), 0, "%s: %s", entry, error ? error : "-");
}

/* Another user's run: User= that user's, not the daemon's; the manager gives it the
 * user's groups (initgroups), HOME, USER and LOGNAME; its home the working directory,
 * "-" so that a home that is not there is no failure; the sandbox and limits unchanged. */
Test(unit_properties, run_as_another_user) {
        build_as("\"sandbox\":\"strict\",\"memoryMax\":\"256M\"", MANAGER_SYSTEM, &alice);
        expect_string("User", "alice");
        expect_absent("Group");
        expect_absent("SupplementaryGroups");
        expect_absent("DynamicUser");
        expect_string("WorkingDirectory", "-/home/alice");
        cr_assert_null(env_of("HOME"), "the manager sets the User='s own");
        cr_assert_null(env_of("USER"));
        expect_string("ProtectSystem", "strict");
        expect_string("ProtectHome", "read-only");
        expect_shared_preset();
        expect_number("MemoryMax", UNIT_PROPERTY_U64, 256ull << 20);

        build_as("\"cwd\":\"/srv/app\"", MANAGER_SYSTEM, &alice);
        expect_string("User", "alice");
        expect_string("WorkingDirectory", "/srv/app");

        /* the daemon's own user under a user manager: no User=, which it could not take */
        build_as("", MANAGER_USER, &alice);
        expect_absent("User");
        expect_string("WorkingDirectory", "-/home/alice");
}

/* An entry naming a user of its own would run another user's instance as someone else. */
Test(unit_properties, run_as_refuses_an_entrys_own_user) {
        static const char *const refused[] = { "\"user\":\"mcp-fs\"", "\"group\":\"mcp\"", "\"dynamicUser\":true" };
        static const char *const words[] = { "sets user", "sets group", "sets dynamicUser" };

        for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
                struct unit_input in = input(server(refused[i]), MANAGER_SYSTEM);

                in.run_as = &alice;
                cr_assert_eq(unit_properties_build(&in, &U, &error), -EINVAL, "%s", refused[i]);
                cr_assert_not_null(strstr(error, "cannot run 's' as user alice: its entry "), "%s", error);
                cr_assert_not_null(strstr(error, words[i]), "%s", error);
                cr_assert_null(U.items, "nothing half-built is left");
                free(error);
                error = NULL;
        }
}

Test(unit_properties, environment_must_be_utf8) {
        char *bad_env[] = { "PATH=/usr/bin", "LANG=caf\xe9", NULL };
        struct unit_input in = input(server(""), MANAGER_SYSTEM);

        in.daemon_env = bad_env;
        cr_assert_eq(unit_properties_build(&in, &U, &error), -EINVAL);
        cr_assert_str_eq(error, "env LANG: the value is not UTF-8 text, which a unit's Environment= must be");
}

/* ---- the a(sv) array ---- */

static sd_bus *bus;
static int pair[2] = { -1, -1 };

/* A message needs a bus; one that is started (never authenticated) is enough to write and
 * read one back. */
static sd_bus_message *start_call(void) {
        sd_bus_message *m = NULL;

        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        cr_assert_eq(sd_bus_new(&bus), 0);
        cr_assert_eq(sd_bus_set_fd(bus, pair[0], pair[0]), 0);
        cr_assert_geq(sd_bus_start(bus), 0);
        cr_assert_geq(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                     "org.freedesktop.systemd1.Manager", "StartTransientUnit"),
                      0);
        cr_assert_geq(sd_bus_message_append(m, "ss", U.unit, "fail"), 0);
        return m;
}

static void stop_bus(void) {
        bus = sd_bus_close_unref(bus); /* no flush: it would wait for a peer that never authenticates */
        if (pair[1] >= 0)
                close(pair[1]);
        pair[0] = pair[1] = -1;
}

/* The D-Bus type of each property as systemd 252 reads it (org.freedesktop.systemd1(5),
 * dbus-execute.c, dbus-cgroup.c, dbus-kill.c, dbus-service.c, dbus-unit.c). */
static const struct {
        const char *name, *signature;
} systemd_types[] = {
        { "Description", "s" },
        { "Type", "s" },
        { "ExecStartEx", "a(sasas)" },
        { "Environment", "as" },
        { "LoadCredential", "a(ss)" },
        { "WorkingDirectory", "s" },
        { "SyslogIdentifier", "s" },
        { "Slice", "s" },
        { "CollectMode", "s" },
        { "KillMode", "s" },
        { "TimeoutStopUSec", "t" },
        { "SendSIGKILL", "b" },
        { "DefaultDependencies", "b" },
        { "Conflicts", "as" },
        { "Before", "as" },
        { "AddRef", "b" },
        { "StandardInputFileDescriptor", "h" },
        { "StandardOutputFileDescriptor", "h" },
        { "StandardErrorFileDescriptor", "h" },
        { "StandardOutput", "s" },
        { "User", "s" },
        { "Group", "s" },
        { "DynamicUser", "b" },
        { "ProtectSystem", "s" },
        { "ProtectHome", "s" },
        { "PrivateTmp", "b" },
        { "PrivateDevices", "b" },
        { "NoNewPrivileges", "b" },
        { "CapabilityBoundingSet", "t" },
        { "AmbientCapabilities", "t" },
        { "RestrictSUIDSGID", "b" },
        { "ProtectKernelTunables", "b" },
        { "ProtectKernelModules", "b" },
        { "ProtectKernelLogs", "b" },
        { "ProtectControlGroups", "b" },
        { "LockPersonality", "b" },
        { "RestrictRealtime", "b" },
        { "SystemCallFilter", "(bas)" },
        { "SystemCallArchitectures", "as" },
        { "UMask", "u" },
        { "PrivateUsers", "b" },
        { "ReadWritePaths", "as" },
        { "ReadOnlyPaths", "as" },
        { "PrivateNetwork", "b" },
        { "RestrictAddressFamilies", "(bas)" },
        { "MemoryMax", "t" },
        { "TasksMax", "t" },
        { "CPUQuotaPerSecUSec", "t" },
        { "StateDirectory", "as" },
};

static const char *systemd_type(const char *name) {
        for (size_t i = 0; i < ARRAY_SIZE(systemd_types); i++)
                if (strcmp(systemd_types[i].name, name) == 0)
                        return systemd_types[i].signature;
        return NULL;
}

/* Reads the a(sv) back: every property once, in order, each with systemd's type. */
static void check_array(sd_bus_message *m) {
        const char *name, *contents;
        size_t i = 0;
        char type;

        cr_assert_gt(sd_bus_message_enter_container(m, 'a', "(sv)"), 0);
        while (sd_bus_message_enter_container(m, 'r', "sv") > 0) {
                cr_assert_geq(sd_bus_message_read(m, "s", &name), 0);
                cr_assert_lt(i, U.n);
                cr_assert_str_eq(name, U.items[i].name);
                cr_assert_gt(sd_bus_message_peek_type(m, &type, &contents), 0);
                cr_assert_eq(type, 'v');
                cr_assert_not_null(systemd_type(name), "%s: a property systemd does not know", name);
                cr_assert_str_eq(contents, systemd_type(name), "%s", name);
                cr_assert_geq(sd_bus_message_skip(m, "v"), 0);
                cr_assert_geq(sd_bus_message_exit_container(m), 0);
                i++;
        }
        cr_assert_eq(i, U.n, "%zu of %zu properties", i, U.n);
        cr_assert_geq(sd_bus_message_exit_container(m), 0);
}

Test(unit_properties, appended_with_systemds_types, .fini = stop_bus) {
        struct unit_input in = input(server("\"sandbox\":\"strict\",\"env\":{\"T\":{\"credential\":\"t\"}},\"cwd\":\"/srv\","
                                            "\"readWritePaths\":[\"/a\"],\"readOnlyPaths\":[\"/b\"],\"network\":false,"
                                            "\"memoryMax\":\"1G\",\"tasksMax\":9,\"cpuQuota\":\"50%\",\"user\":\"u\","
                                            "\"group\":\"g\",\"dynamicUser\":true,\"stateDirectory\":true"),
                                     MANAGER_SYSTEM);
        sd_bus_message *m;

        in.add_ref = true;
        in.stdio[0] = in.stdio[1] = in.stdio[2] = STDERR_FILENO;
        cr_assert_eq(unit_properties_build(&in, &U, &error), 0, "%s", error ? error : "");
        m = start_call();
        cr_assert_geq(unit_properties_append(&U, m), 0);
        cr_assert_geq(sd_bus_message_append(m, "a(sa(sv))", 0), 0);
        cr_assert_geq(sd_bus_message_seal(m, 1, 0), 0);
        cr_assert_str_eq(sd_bus_message_get_signature(m, true), "ssa(sv)a(sa(sv))");
        cr_assert_geq(sd_bus_message_rewind(m, true), 0);
        cr_assert_geq(sd_bus_message_skip(m, "ss"), 0);
        check_array(m);
        sd_bus_message_unref(m);

        /* the user manager's namespace too */
        unit_properties_done(&U);
        build("", MANAGER_USER);
        cr_assert_geq(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                     "org.freedesktop.systemd1.Manager", "StartTransientUnit"),
                      0);
        cr_assert_geq(unit_properties_append(&U, m), 0);
        cr_assert_geq(sd_bus_message_seal(m, 2, 0), 0);
        cr_assert_geq(sd_bus_message_rewind(m, true), 0);
        check_array(m);
        sd_bus_message_unref(m);
}

/* The values as they travel: a command, the credentials, a list. */
Test(unit_properties, appended_values, .fini = stop_bus) {
        const char *path, *id, *cred_path, *call;
        sd_bus_message *m;
        char **argv = NULL, **flags = NULL;
        int allow;

        build("\"env\":{\"T\":{\"credential\":\"t\"}},\"network\":false", MANAGER_SYSTEM);
        m = start_call();
        cr_assert_geq(unit_properties_append(&U, m), 0);
        cr_assert_geq(sd_bus_message_seal(m, 1, 0), 0);
        cr_assert_geq(sd_bus_message_rewind(m, true), 0);
        cr_assert_geq(sd_bus_message_skip(m, "ss"), 0);
        cr_assert_gt(sd_bus_message_enter_container(m, 'a', "(sv)"), 0);
        while (sd_bus_message_enter_container(m, 'r', "sv") > 0) {
                const char *name;

                cr_assert_geq(sd_bus_message_read(m, "s", &name), 0);
                if (strcmp(name, "ExecStartEx") == 0) {
                        cr_assert_gt(sd_bus_message_enter_container(m, 'v', "a(sasas)"), 0);
                        cr_assert_gt(sd_bus_message_enter_container(m, 'a', "(sasas)"), 0);
                        cr_assert_gt(sd_bus_message_enter_container(m, 'r', "sasas"), 0);
                        cr_assert_geq(sd_bus_message_read(m, "s", &path), 0);
                        cr_assert_geq(sd_bus_message_read_strv(m, &argv), 0);
                        cr_assert_geq(sd_bus_message_read_strv(m, &flags), 0);
                        cr_assert_str_eq(path, HELPER);
                        cr_assert_str_eq(argv[1], "T=t");
                        cr_assert_str_eq(argv[3], "/usr/bin/npx");
                        cr_assert_str_eq(flags[0], "no-env-expand", "the manager expands no $VAR in argv");
                        cr_assert_null(flags[1], "a failure of the command is not ignored (no \"ignore-failure\")");
                        strv_free(argv);
                        strv_free(flags);
                        cr_assert_geq(sd_bus_message_exit_container(m), 0);
                        cr_assert_geq(sd_bus_message_exit_container(m), 0);
                        cr_assert_geq(sd_bus_message_exit_container(m), 0);
                } else if (strcmp(name, "LoadCredential") == 0) {
                        cr_assert_gt(sd_bus_message_enter_container(m, 'v', "a(ss)"), 0);
                        cr_assert_gt(sd_bus_message_read(m, "a(ss)", 1, &id, &cred_path), 0);
                        cr_assert_str_eq(id, "t");
                        cr_assert_str_eq(cred_path, "/run/credentials/mcpvisor.service/t");
                        cr_assert_geq(sd_bus_message_exit_container(m), 0);
                } else if (strcmp(name, "SystemCallFilter") == 0) {
                        cr_assert_gt(sd_bus_message_read(m, "v", "(bas)", &allow, 1, &call), 0);
                        cr_assert(allow);
                        cr_assert_str_eq(call, "@system-service");
                } else
                        cr_assert_geq(sd_bus_message_skip(m, "v"), 0);
                cr_assert_geq(sd_bus_message_exit_container(m), 0);
        }
        sd_bus_message_unref(m);
}

/* args as the exec launcher passes them: the manager would expand ${VAR}, $VAR and $$ in
 * ExecStart='s arguments (a word that is only $VAR even split in several), so the command
 * goes as ExecStartEx= with "no-env-expand" and the arguments untouched. */
Test(unit_properties, args_not_expanded_by_the_manager, .fini = stop_bus) {
        static const char *const args[] = { "npx", "${HOME}", "$$", "$1", "$HOME", "a $PATH b", "%h", NULL };
        const char *path;
        sd_bus_message *m;
        const char *text = "{\"mcpServers\":{\"s\":{\"command\":\"npx\",\"args\":[\"${HOME}\",\"$$\",\"$1\",\"$HOME\","
                           "\"a $PATH b\",\"%h\"]}}}";
        struct unit_input in;
        char **argv = NULL, **flags = NULL;
        bool seen = false;

        done();
        cr_assert_eq(config_parse(text, strlen(text), &C, &P), 0, "%s", text);
        in = input(config_find_server(&C, "s"), MANAGER_SYSTEM);
        cr_assert_eq(unit_properties_build(&in, &U, &error), 0, "%s", error ? error : "-");
        expect_absent("ExecStart");
        expect_strv("ExecStartEx", UNIT_PROPERTY_EXEC, args);
        m = start_call();
        cr_assert_geq(unit_properties_append(&U, m), 0);
        cr_assert_geq(sd_bus_message_seal(m, 1, 0), 0);
        cr_assert_geq(sd_bus_message_rewind(m, true), 0);
        cr_assert_geq(sd_bus_message_skip(m, "ss"), 0);
        cr_assert_gt(sd_bus_message_enter_container(m, 'a', "(sv)"), 0);
        while (sd_bus_message_enter_container(m, 'r', "sv") > 0) {
                const char *name;

                cr_assert_geq(sd_bus_message_read(m, "s", &name), 0);
                cr_assert_str_neq(name, "ExecStart", "a command the manager would expand");
                if (strcmp(name, "ExecStartEx") == 0) {
                        cr_assert_gt(sd_bus_message_enter_container(m, 'v', "a(sasas)"), 0);
                        cr_assert_gt(sd_bus_message_enter_container(m, 'a', "(sasas)"), 0);
                        cr_assert_gt(sd_bus_message_enter_container(m, 'r', "sasas"), 0);
                        cr_assert_geq(sd_bus_message_read(m, "s", &path), 0);
                        cr_assert_geq(sd_bus_message_read_strv(m, &argv), 0);
                        cr_assert_geq(sd_bus_message_read_strv(m, &flags), 0);
                        cr_assert_str_eq(path, "/usr/bin/npx");
                        for (size_t i = 0; args[i]; i++)
                                cr_assert_str_eq(argv[i], args[i], "argv[%zu]", i);
                        cr_assert_str_eq(flags[0], "no-env-expand");
                        cr_assert_null(flags[1]);
                        strv_free(argv);
                        strv_free(flags);
                        seen = true;
                        cr_assert_geq(sd_bus_message_exit_container(m), 0);
                        cr_assert_geq(sd_bus_message_exit_container(m), 0);
                        cr_assert_geq(sd_bus_message_exit_container(m), 0);
                } else
                        cr_assert_geq(sd_bus_message_skip(m, "v"), 0);
                cr_assert_geq(sd_bus_message_exit_container(m), 0);
        }
        cr_assert(seen);
        sd_bus_message_unref(m);
}

/* The oneshot that registers a server's OOM watch for a daemon under ProtectControlGroups=yes:
 * named after the server's unit, the watch's eventfd as stdin and memory.oom_control as
 * stderr, "0 2" written by the shell to the path given as its $1 (never the manager's). */
Test(unit_properties, oom_registrar, .fini = stop_bus) {
        static const char *const argv[] = { "sh", "-c", "printf '0 2' >\"$1\"", "sh",
                                            "/sys/fs/cgroup/memory/mcpvisor.slice/mcpvisor-s@1-2.service/cgroup.event_control",
                                            NULL };
        sd_bus_message *m;

        cr_assert_eq(unit_properties_build_oom_registrar("mcpvisor-s@1-2.service", argv[4], 7, 8, &U), 0);
        cr_assert_str_eq(U.unit, "mcpvisor-s@1-2-oom.service");
        expect_string("Type", "oneshot");
        expect_string("Slice", "mcpvisor.slice");
        expect_string("CollectMode", "inactive-or-failed");
        expect_string("StandardOutput", "null");
        expect_bool("DefaultDependencies", false);
        expect_bool("NoNewPrivileges", true);
        expect_number("CapabilityBoundingSet", UNIT_PROPERTY_U64, 0);
        expect_absent("User");
        cr_assert_str_eq(prop("ExecStartEx", UNIT_PROPERTY_EXEC)->string, "/bin/sh");
        expect_strv("ExecStartEx", UNIT_PROPERTY_EXEC, argv);
        cr_assert_eq(prop("StandardInputFileDescriptor", UNIT_PROPERTY_FD)->fd, 7);
        cr_assert_eq(prop("StandardErrorFileDescriptor", UNIT_PROPERTY_FD)->fd, 8);
        expect_absent("StandardOutputFileDescriptor");
        unit_properties_done(&U);
        cr_assert_eq(unit_properties_build_oom_registrar("mcpvisor-s@1-2.service", argv[4], STDERR_FILENO, STDERR_FILENO, &U), 0);
        m = start_call();
        cr_assert_geq(unit_properties_append(&U, m), 0);
        cr_assert_geq(sd_bus_message_append(m, "a(sa(sv))", 0), 0);
        cr_assert_geq(sd_bus_message_seal(m, 1, 0), 0);
        cr_assert_geq(sd_bus_message_rewind(m, true), 0);
        cr_assert_geq(sd_bus_message_skip(m, "ss"), 0);
        check_array(m);
        sd_bus_message_unref(m);
        unit_properties_done(&U);
        cr_assert_eq(unit_properties_build_oom_registrar("other.scope", argv[4], 7, 8, &U), -EINVAL);
        cr_assert_eq(unit_properties_build_oom_registrar("mcpvisor-s@1.service", "relative", 7, 8, &U), -EINVAL);
}
