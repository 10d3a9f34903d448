/* Command-line parsing for mcpvisord. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "log.h"
#include "paths.h"

enum { OPT_CONFIG = 'c', OPT_SOCKET = 's', OPT_CONTROL = 'C', OPT_LOG_LEVEL = 'l',
       OPT_HELP = 'h', OPT_VERSION = 'V', OPT_CHECK = 0x100 };

void options_usage(FILE *out) {
        fprintf(out,
                "Usage: mcpvisord [OPTIONS]\n"
                "Run and supervise MCP servers, served to local agents as one MCP endpoint.\n"
                "\n"
                "  -c, --config FILE           configuration file (default %s as root,\n"
                "                              else ~/.config/mcpvisor/mcpvisor.json)\n"
                "  -s, --socket PATH           MCP socket to bind when not socket-activated\n"
                "  -C, --control-socket PATH   control socket to bind when not socket-activated\n"
                "                              (default with --socket: beside it, DIR/control.sock\n"
                "                              for DIR/mcp.sock)\n"
                "  -l, --log-level LEVEL       err, warning, notice, info (default) or debug\n"
                "      --check-config          validate the configuration, print problems, exit\n"
                "  -h, --help                  show this help\n"
                "  -V, --version               show the version\n"
                "\n"
                "Under systemd socket activation the sockets come from the .socket units\n"
                "(FileDescriptorName=mcp and control). See mcpvisord(8).\n",
                PATH_DEFAULT_CONFIG);
}

/* Relative socket paths would depend on the working directory systemd gives us. */
static bool absolute_or_unset(const char *path, FILE *err) {
        if (!path || path[0] == '/')
                return true;
        fprintf(err, "mcpvisord: socket path '%s' must be absolute\n", path);
        return false;
}

int options_parse(int argc, char *const *argv, struct options *ret, FILE *err) {
        static const struct option longopts[] = {
                { "config", required_argument, NULL, OPT_CONFIG },
                { "socket", required_argument, NULL, OPT_SOCKET },
                { "control-socket", required_argument, NULL, OPT_CONTROL },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "check-config", no_argument, NULL, OPT_CHECK },
                { "help", no_argument, NULL, OPT_HELP },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        struct options o = { .action = ACTION_RUN, .log_level = -1 };
        int c;

        optind = 0; /* GNU getopt: full re-initialisation, so the parser can run twice */
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:s:C:l:hV", longopts, NULL)) >= 0) {
                switch (c) {
                case OPT_CONFIG: o.config_path = optarg; break;
                case OPT_SOCKET: o.socket_path = optarg; break;
                case OPT_CONTROL: o.control_socket_path = optarg; break;
                case OPT_LOG_LEVEL:
                        o.log_level = log_level_from_string(optarg);
                        if (o.log_level < 0) {
                                fprintf(err, "mcpvisord: unknown log level '%s' (use err, warning, notice, info or debug)\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case OPT_CHECK: o.action = ACTION_CHECK_CONFIG; break;
                case OPT_HELP: o.action = ACTION_HELP; break;
                case OPT_VERSION: o.action = ACTION_VERSION; break;
                case ':':
                        fprintf(err, "mcpvisord: option '%s' needs an argument\n", argv[optind - 1]);
                        return -EINVAL;
                default:
                        /* In a cluster like -xh, optind has not moved on yet: name the letter. */
                        if (strncmp(argv[optind - 1], "--", 2) != 0 && optopt > ' ' && optopt < 127)
                                fprintf(err, "mcpvisord: unknown option '-%c'; see --help\n", optopt);
                        else
                                fprintf(err, "mcpvisord: unknown option '%s'; see --help\n", argv[optind - 1]);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(err, "mcpvisord: unexpected argument '%s'; see --help\n", argv[optind]);
                return -EINVAL;
        }
        if (!absolute_or_unset(o.socket_path, err) || !absolute_or_unset(o.control_socket_path, err))
                return -EINVAL;
        *ret = o;
        return 0;
}
