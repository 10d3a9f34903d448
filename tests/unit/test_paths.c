/* Unit tests for paths.c: the default socket paths of the daemon, and the choice of socket
 * mcpvisorctl makes between the system and the user service. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "paths.h"
#include "unit-helpers.h"

/* Two runtime directories of the test's own, standing for /run and $XDG_RUNTIME_DIR. */
static char sys_dir[256], user_dir[256];

static void setup(void) {
        snprintf(sys_dir, sizeof sys_dir, "%s", tmp_path("run"));
        snprintf(user_dir, sizeof user_dir, "%s", tmp_path("user"));
        cr_assert_eq(mkdir(sys_dir, 0755), 0);
        cr_assert_eq(mkdir(user_dir, 0700), 0);
}

static void teardown(void) {
        tmpdir_remove();
}

TestSuite(paths, .init = setup, .fini = teardown);

/* Makes dir/mcpvisor/name a listening socket, as the units do. */
static void make_socket(const char *dir, const char *name) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char sub[300];
        int fd;

        snprintf(sub, sizeof sub, "%s/mcpvisor", dir);
        cr_assert(mkdir(sub, 0755) == 0 || errno == EEXIST);
        cr_assert_lt(strlen(sub) + 1 + strlen(name), sizeof sa.sun_path, "socket path too long");
        strcpy(sa.sun_path, sub);
        strcat(sa.sun_path, "/");
        strcat(sa.sun_path, name);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert_geq(fd, 0);
        cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind %s: %s", sa.sun_path, strerror(errno));
        close(fd); /* the file stays, as after a crash: only its existence counts */
}

static void expect_path(char *got, const char *dir, const char *name) {
        char want[400];

        snprintf(want, sizeof want, "%s/mcpvisor/%s", dir, name);
        cr_assert_not_null(got, "no path (errno %s); expected %s", strerror(errno), want);
        cr_expect_str_eq(got, want);
        free(got);
}

static char *pick(enum path_scope scope, uid_t euid, const char *xdg) {
        return path_pick_socket("control.sock", scope, euid, xdg, sys_dir);
}

Test(paths, socket_in_needs_an_absolute_directory) {
        expect_path(path_socket_in("/run/user/1000", "mcp.sock"), "/run/user/1000", "mcp.sock");
        errno = 0;
        cr_expect_null(path_socket_in(NULL, "mcp.sock"));
        cr_expect_eq(errno, ENOENT);
        errno = 0;
        cr_expect_null(path_socket_in("run/user/1000", "mcp.sock"), "a relative XDG_RUNTIME_DIR is unusable");
        cr_expect_eq(errno, ENOENT);
        cr_expect_null(path_socket_in("", "mcp.sock"));
}

Test(paths, daemon_default_follows_the_euid) {
        cr_assert_eq(setenv("XDG_RUNTIME_DIR", user_dir, 1), 0);
        if (geteuid() == 0)
                expect_path(path_default_socket("mcp.sock"), "/run", "mcp.sock");
        else
                expect_path(path_default_socket("mcp.sock"), user_dir, "mcp.sock");
        cr_assert_eq(unsetenv("XDG_RUNTIME_DIR"), 0);
        if (geteuid() != 0) {
                errno = 0;
                cr_expect_null(path_default_socket("mcp.sock"));
                cr_expect_eq(errno, ENOENT);
        }
}

Test(paths, system_scope_is_always_the_system_path) {
        make_socket(user_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_SYSTEM, 1000, user_dir), sys_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_SYSTEM, 0, user_dir), sys_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_SYSTEM, 1000, NULL), sys_dir, "control.sock");
}

Test(paths, user_scope_is_always_the_user_path) {
        make_socket(sys_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_USER, 1000, user_dir), user_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_USER, 0, user_dir), user_dir, "control.sock");
        errno = 0;
        cr_expect_null(pick(PATH_SCOPE_USER, 1000, NULL), "--user without XDG_RUNTIME_DIR has no path");
        cr_expect_eq(errno, ENOENT);
        cr_expect_null(pick(PATH_SCOPE_USER, 1000, "relative"));
}

Test(paths, auto_as_root_is_the_system_path) {
        make_socket(user_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_AUTO, 0, user_dir), sys_dir, "control.sock");
}

Test(paths, auto_prefers_an_existing_user_socket) {
        make_socket(user_dir, "control.sock");
        make_socket(sys_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_AUTO, 1000, user_dir), user_dir, "control.sock");
}

Test(paths, auto_falls_back_to_an_existing_system_socket) {
        make_socket(sys_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_AUTO, 1000, user_dir), sys_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_AUTO, 1000, NULL), sys_dir, "control.sock");
}

Test(paths, auto_with_neither_names_the_user_path) {
        expect_path(pick(PATH_SCOPE_AUTO, 1000, user_dir), user_dir, "control.sock");
}

Test(paths, auto_without_xdg_runtime_dir_names_the_system_path) {
        expect_path(pick(PATH_SCOPE_AUTO, 1000, NULL), sys_dir, "control.sock");
        expect_path(pick(PATH_SCOPE_AUTO, 1000, "relative/dir"), sys_dir, "control.sock");
}

Test(paths, each_socket_is_looked_at_on_its_own) {
        /* only the MCP socket exists in the user directory: the control socket is the system's */
        make_socket(user_dir, "mcp.sock");
        make_socket(sys_dir, "control.sock");
        expect_path(path_pick_socket("mcp.sock", PATH_SCOPE_AUTO, 1000, user_dir, sys_dir), user_dir, "mcp.sock");
        expect_path(path_pick_socket("control.sock", PATH_SCOPE_AUTO, 1000, user_dir, sys_dir), sys_dir, "control.sock");
}

Test(paths, client_socket_reads_the_environment) {
        cr_assert_eq(setenv("XDG_RUNTIME_DIR", user_dir, 1), 0);
        expect_path(path_client_socket("mcp.sock", PATH_SCOPE_USER), user_dir, "mcp.sock");
        expect_path(path_client_socket("mcp.sock", PATH_SCOPE_SYSTEM), PATH_SYSTEM_RUNTIME_DIR, "mcp.sock");
        if (geteuid() == 0)
                expect_path(path_client_socket("mcp.sock", PATH_SCOPE_AUTO), PATH_SYSTEM_RUNTIME_DIR, "mcp.sock");
}

Test(paths, default_config_by_manager) {
        char *p = path_config_for(0, "/x", "/root");
        cr_assert_str_eq(p, PATH_DEFAULT_CONFIG);
        free(p);
        p = path_config_for(1000, "/home/u/.cfg", "/home/u");
        cr_assert_str_eq(p, "/home/u/.cfg/mcpvisor/mcpvisor.json");
        free(p);
        p = path_config_for(1000, NULL, "/home/u");
        cr_assert_str_eq(p, "/home/u/.config/mcpvisor/mcpvisor.json");
        free(p);
        p = path_config_for(1000, "relative", "/home/u");
        cr_assert_str_eq(p, "/home/u/.config/mcpvisor/mcpvisor.json", "a relative XDG_CONFIG_HOME is ignored");
        free(p);
        cr_assert_null(path_config_for(1000, NULL, NULL));
}

/* A daemon given only its MCP socket keeps its control socket beside it. */
Test(paths, control_beside) {
        static const struct {
                const char *mcp, *control;
        } cases[] = {
                { "/tmp/a/mcp.sock", "/tmp/a/control.sock" },
                { "/run/mcpvisor/mcp.sock", "/run/mcpvisor/control.sock" },
                { "/tmp/agent.sock", "/tmp/agent.control.sock" },
                { "/tmp/x/agent", "/tmp/x/agent.control.sock" },
                { "/tmp/.sock", "/tmp/.sock.control.sock" },
                { "/mcp.sock", "/control.sock" },
                { "/tmp/mcp.sock.d/mcp.sockx", "/tmp/mcp.sock.d/mcp.sockx.control.sock" },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char *p = path_control_beside(cases[i].mcp);

                cr_assert_not_null(p);
                cr_assert_str_eq(p, cases[i].control, "%s", cases[i].mcp);
                free(p);
        }
}
