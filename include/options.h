/* mcpvisord's command line. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

enum options_action {
        ACTION_RUN,
        ACTION_HELP,
        ACTION_VERSION,
        ACTION_CHECK_CONFIG,
};

struct options {
        enum options_action action;
        const char *config_path;         /* NULL: the default path */
        const char *socket_path;         /* NULL: from config or default */
        const char *control_socket_path; /* NULL: from config or default */
        int log_level;                   /* -1: from config or default */
};

/* Fills ret from argv. On a usage error prints to err and returns -EINVAL. */
int options_parse(int argc, char *const *argv, struct options *ret, FILE *err);
void options_usage(FILE *out);
