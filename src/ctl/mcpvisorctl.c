/* mcpvisorctl: the control client of mcpvisord. Global options, then one command from the
 * table below; each command lives in a file of its own (ctl-*.c). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-format.h"
#include "ctl.h"
#include "macro.h"
#include "version.h"

static const struct ctl_command *const commands[] = {
        &ctl_cmd_status, &ctl_cmd_clients, &ctl_cmd_disconnect, &ctl_cmd_start, &ctl_cmd_stop, &ctl_cmd_restart,
        &ctl_cmd_reload,  &ctl_cmd_logs,    &ctl_cmd_connect,    &ctl_cmd_access,     &ctl_cmd_login,
        &ctl_cmd_logout,  &ctl_cmd_client_metadata,
};

enum { OPT_SOCKET = 's', OPT_CONTROL = 'C', OPT_HELP = 'h', OPT_VERSION = 'V',
       OPT_SYSTEM = 0x100, OPT_USER, OPT_JSON, OPT_NO_WAIT, OPT_TIMEOUT, OPT_ACCESS_USER, OPT_PROFILE, OPT_CLIENT,
       OPT_FOLLOW = 'f', OPT_LINES = 'n' };

static void usage(FILE *out) {
        fprintf(out,
                "Usage: mcpvisorctl [OPTIONS] COMMAND [ARGS...]\n"
                "Control mcpvisord, the MCP server supervisor, and connect MCP clients to it.\n"
                "\n"
                "Commands:\n");
        for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
                char left[64];

                snprintf(left, sizeof left, "%s %s", commands[i]->name, commands[i]->synopsis);
                fprintf(out, "  %-27s %s\n", left, commands[i]->summary);
        }
        fprintf(out,
                "\n"
                "Options:\n"
                "  -s, --socket PATH           MCP socket, for connect ($MCPVISOR_SOCKET); without -C,\n"
                "                              the control socket is the one beside it\n"
                "  -C, --control-socket PATH   control socket ($MCPVISOR_CONTROL_SOCKET)\n"
                "      --system                the system service's sockets in /run/mcpvisor/\n"
                "      --user                  the user service's sockets in $XDG_RUNTIME_DIR/mcpvisor/\n"
                "      --json                  status, clients, access: print the daemon's answer as JSON\n"
                "      --profile NAME          connect: the daemon's profile to use ($MCPVISOR_PROFILE);\n"
                "                              access: as a connection that chose this profile\n"
                "      --no-wait               start, stop, restart: return once the action began\n"
                "  -f, --follow                logs: show lines as they come\n"
                "  -n, --lines N               logs: how many of the last lines to show (20)\n"
                "      --timeout SECONDS       how long to wait for the daemon (status, clients and connect: 10,\n"
                "                              start, stop, restart and reload: 60)\n"
                "  -h, --help                  show this help\n"
                "  -V, --version               show the version\n"
                "After the command access, --user NAME names the user to check (a name or uid);\n"
                "after stop, --user NAME or --client ID the owner of the instance to stop.\n"
                "pass -C PATH there for the user service's control socket.\n"
                "\n"
                "Exit status: 0 done, 1 failed (the message says why; access: an unknown user\n"
                "or profile), 2 usage error,\n"
                "3 status found an enabled server that is not ready. See mcpvisorctl(1).\n");
}

static const struct ctl_command *find_command(const char *name) {
        for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
                if (strcmp(commands[i]->name, name) == 0)
                        return commands[i];
        return NULL;
}

/* The options we saw, so that those a command does not take can be refused once the
 * command is known. */
struct seen {
        unsigned options;
        bool help, version;
};

static int parse_timeout(struct ctl *ctl, const char *arg) {
        int r = ctl_parse_seconds(arg, &ctl->timeout_usec);

        if (r < 0)
                fprintf(stderr, CTL_NAME ": --timeout: expected seconds, more than 0 and at most 86400, got '%s'\n", arg);
        return r;
}

static int parse_lines(struct ctl *ctl, const char *arg) {
        char *end;
        unsigned long n;

        errno = 0;
        n = strtoul(arg, &end, 10);
        if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-' || n < 1 || n > 100000) {
                fprintf(stderr, CTL_NAME ": --lines: expected a number from 1 to 100000, got '%s'\n", arg);
                return -EINVAL;
        }
        ctl->lines = (unsigned)n;
        return 0;
}

/* Whether argv[i], an option, takes the next argument as its value. */
static bool takes_value(const char *arg) {
        static const char *const with_value[] = { "-s", "-C", "--socket", "--control-socket", "--timeout", "--profile", "--lines", "-n",
                                                  "--client" };

        for (size_t i = 0; i < ARRAY_SIZE(with_value); i++)
                if (strcmp(arg, with_value[i]) == 0)
                        return true;
        return false;
}

/* After the command access (or stop), --user names the user to check (or whose instance
 * to stop), as operators write it (`mcpvisorctl access --user alice`), not the user
 * service's sockets: it is renamed before the options are parsed, wherever getopt would
 * have taken it. */
static void rename_access_user(int argc, char **argv) {
        static char renamed[] = "--access-user";
        bool after_access = false;

        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
                if (after_access && strcmp(argv[i], "--user") == 0)
                        argv[i] = renamed;
                else if (argv[i][0] == '-' && takes_value(argv[i]))
                        i++;
                else if (argv[i][0] != '-' && !after_access) {
                        if (strcmp(argv[i], "access") != 0 && strcmp(argv[i], "stop") != 0)
                                return;
                        after_access = true;
                }
        }
}

static int parse_options(int argc, char **argv, struct ctl *ctl, struct seen *seen) {
        static const struct option longopts[] = {
                { "socket", required_argument, NULL, OPT_SOCKET },
                { "control-socket", required_argument, NULL, OPT_CONTROL },
                { "system", no_argument, NULL, OPT_SYSTEM },
                { "user", no_argument, NULL, OPT_USER },
                { "json", no_argument, NULL, OPT_JSON },
                { "no-wait", no_argument, NULL, OPT_NO_WAIT },
                { "timeout", required_argument, NULL, OPT_TIMEOUT },
                { "access-user", required_argument, NULL, OPT_ACCESS_USER },
                { "profile", required_argument, NULL, OPT_PROFILE },
                { "client", required_argument, NULL, OPT_CLIENT },
                { "follow", no_argument, NULL, OPT_FOLLOW },
                { "lines", required_argument, NULL, OPT_LINES },
                { "help", no_argument, NULL, OPT_HELP },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, ":s:C:hVfn:", longopts, NULL)) >= 0) {
                switch (c) {
                case OPT_SOCKET: ctl->socket_path = optarg; break;
                case OPT_CONTROL: ctl->control_path = optarg; break;
                case OPT_SYSTEM: ctl->scope = PATH_SCOPE_SYSTEM; break;
                case OPT_USER: ctl->scope = PATH_SCOPE_USER; break;
                case OPT_JSON: ctl->json = true; seen->options |= CTL_OPT_JSON; break;
                case OPT_NO_WAIT: ctl->no_wait = true; seen->options |= CTL_OPT_NO_WAIT; break;
                case OPT_TIMEOUT:
                        if (parse_timeout(ctl, optarg) < 0)
                                return -EINVAL;
                        seen->options |= CTL_OPT_TIMEOUT;
                        break;
                case OPT_ACCESS_USER: ctl->access_user = optarg; seen->options |= CTL_OPT_ACCESS_USER; break;
                case OPT_PROFILE: ctl->profile = optarg; seen->options |= CTL_OPT_PROFILE; break;
                case OPT_CLIENT: ctl->client_id = optarg; seen->options |= CTL_OPT_CLIENT; break;
                case OPT_FOLLOW: ctl->follow = true; seen->options |= CTL_OPT_FOLLOW; break;
                case OPT_LINES:
                        if (parse_lines(ctl, optarg) < 0)
                                return -EINVAL;
                        seen->options |= CTL_OPT_LINES;
                        break;
                case OPT_HELP: seen->help = true; break;
                case OPT_VERSION: seen->version = true; break;
                case ':':
                        fprintf(stderr, CTL_NAME ": option '%s' needs an argument\n", argv[optind - 1]);
                        return -EINVAL;
                default:
                        if (strncmp(argv[optind - 1], "--", 2) != 0 && optopt > ' ' && optopt < 127)
                                fprintf(stderr, CTL_NAME ": unknown option '-%c'; see --help\n", optopt);
                        else
                                fprintf(stderr, CTL_NAME ": unknown option '%s'; see --help\n", argv[optind - 1]);
                        return -EINVAL;
                }
        }
        return 0;
}

static const char *const option_names[] = { "--json", "--no-wait", "--timeout", "--user NAME", "--profile", "--follow",
                                            "--lines", "--client" };

/* The command, its arguments counted and its options checked. NULL after a usage error. */
static const struct ctl_command *pick_command(int argc, char **argv, const struct seen *seen) {
        const struct ctl_command *cmd;
        int n;

        if (argc < 1) {
                fprintf(stderr, CTL_NAME ": no command given; see --help\n");
                return NULL;
        }
        cmd = find_command(argv[0]);
        if (!cmd) {
                fprintf(stderr, CTL_NAME ": unknown command '%s'; see --help\n", argv[0]);
                return NULL;
        }
        for (size_t i = 0; i < ARRAY_SIZE(option_names); i++)
                if (seen->options & ~cmd->options & (1u << i)) {
                        fprintf(stderr, CTL_NAME ": %s does not apply to %s\n", option_names[i], cmd->name);
                        return NULL;
                }
        n = argc - 1;
        if (n < cmd->min_args || (cmd->max_args >= 0 && n > cmd->max_args)) {
                fprintf(stderr, CTL_NAME ": usage: mcpvisorctl %s %s\n", cmd->name, cmd->synopsis);
                return NULL;
        }
        return cmd;
}

/* Options first, then --system/--user, then the environment, then the default. */
static const char *socket_path(struct ctl *ctl, const char *option, const char *env, const char *name, int slot) {
        const char *e = secure_getenv(env);

        if (option)
                return option;
        if (ctl->scope == PATH_SCOPE_AUTO && e && *e)
                return e;
        if (!ctl->defaults[slot])
                ctl->defaults[slot] = path_client_socket(name, ctl->scope);
        if (!ctl->defaults[slot] && errno == ENOENT)
                fprintf(stderr, CTL_NAME ": XDG_RUNTIME_DIR is not set (or not absolute), so there is no user "
                                         "service socket; pass %s PATH, or --system\n",
                        slot == 0 ? "--socket" : "--control-socket");
        else if (!ctl->defaults[slot])
                fprintf(stderr, CTL_NAME ": %s\n", strerror(errno));
        return ctl->defaults[slot];
}

const char *ctl_mcp_path(struct ctl *ctl) {
        return socket_path(ctl, ctl->socket_path, "MCPVISOR_SOCKET", "mcp.sock", 0);
}

/* The control socket beside an MCP socket's path, kept in ctl. */
static const char *control_beside(struct ctl *ctl, const char *mcp_path) {
        if (!ctl->defaults[1])
                ctl->defaults[1] = path_control_beside(mcp_path);
        if (!ctl->defaults[1])
                fprintf(stderr, CTL_NAME ": %s\n", strerror(errno));
        return ctl->defaults[1];
}

/* -C, else beside the MCP socket -s names (where a daemon run with --socket alone puts
 * it), else $MCPVISOR_CONTROL_SOCKET, else beside $MCPVISOR_SOCKET, else the default. */
const char *ctl_control_path(struct ctl *ctl) {
        const char *control_env = secure_getenv("MCPVISOR_CONTROL_SOCKET"), *mcp_env = secure_getenv("MCPVISOR_SOCKET");

        if (ctl->control_path)
                return ctl->control_path;
        if (ctl->socket_path)
                return control_beside(ctl, ctl->socket_path);
        if (ctl->scope == PATH_SCOPE_AUTO && !(control_env && *control_env) && mcp_env && *mcp_env)
                return control_beside(ctl, mcp_env);
        return socket_path(ctl, NULL, "MCPVISOR_CONTROL_SOCKET", "control.sock", 1);
}

int main(int argc, char **argv) {
        struct ctl ctl = { .scope = PATH_SCOPE_AUTO };
        struct seen seen = { 0 };
        const struct ctl_command *cmd;
        int r;

        /* A daemon or client that hangs up must cost us EPIPE, not the process. */
        signal(SIGPIPE, SIG_IGN);
        rename_access_user(argc, argv);
        if (parse_options(argc, argv, &ctl, &seen) < 0)
                return CTL_EXIT_USAGE;
        if (seen.help) {
                usage(stdout);
                return CTL_EXIT_OK;
        }
        if (seen.version) {
                printf("mcpvisorctl %s\n", MCPVISOR_VERSION);
                return CTL_EXIT_OK;
        }
        cmd = pick_command(argc - optind, argv + optind, &seen);
        if (!cmd)
                return CTL_EXIT_USAGE;
        if (!(seen.options & CTL_OPT_TIMEOUT))
                ctl.timeout_usec = cmd->default_timeout_usec ?: CTL_DEFAULT_TIMEOUT_USEC;
        r = cmd->run(&ctl, argc - optind - 1, argv + optind + 1);
        free(ctl.defaults[0]);
        free(ctl.defaults[1]);
        return r;
}
