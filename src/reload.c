/* Reload: the configuration read again and applied while running (SIGHUP, systemctl
 * reload, mcpvisorctl reload). A configuration with any error changes nothing. Otherwise
 * servers are added, removed, restarted or left alone (supervisor_reload), the settings
 * that can change live do, and clients stay connected and hear list_changed. The sockets
 * are already bound: their settings take effect at the next start. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "macro.h"

static bool str_differs(const char *a, const char *b) {
        return (a || b) && (!a || !b || strcmp(a, b) != 0);
}

static json_object *problems_json(const struct config_problems *p) {
        json_object *list = json_object_new_array(), *ret = json_object_new_object();

        for (size_t i = 0; i < p->count; i++) {
                const struct config_problem *q = &p->items[i];
                json_object *item = json_object_new_object();

                if (q->file)
                        json_object_object_add(item, "file", json_object_new_string(q->file));
                json_object_object_add(item, "path", json_object_new_string(q->path));
                json_object_object_add(item, "severity",
                                       json_object_new_string(q->severity == PROBLEM_ERROR ? "error" : "warning"));
                json_object_object_add(item, "message", json_object_new_string(q->message ? q->message : "out of memory"));
                json_object_array_add(list, item);
        }
        json_object_object_add(ret, "problems", list);
        return ret;
}

static void log_problems(struct daemon *d, const struct config_problems *p) {
        for (size_t i = 0; i < p->count; i++) {
                const struct config_problem *q = &p->items[i];
                log_emit(&d->log, q->severity == PROBLEM_ERROR ? LOG_ERR : LOG_WARNING, NULL, "%s: %s%s%s",
                         q->file ? q->file : d->source.path, q->path, q->path[0] ? ": " : "", q->message ? q->message : "");
        }
}

/* The sockets stay as bound; a changed path or mode is said once, here. The command
 * line's paths win over the file's, as at startup. */
static void keep_sockets(struct daemon *d, struct config *next) {
        const char *socket = d->source.socket_path ? d->source.socket_path : next->socket_path,
                   *control = d->source.control_socket_path ? d->source.control_socket_path : next->control_socket_path;

        if (str_differs(d->config.socket_path, socket) || str_differs(d->config.control_socket_path, control) ||
            d->config.socket_mode != next->socket_mode)
                log_notice(&d->log, "socket settings changed; they take effect when mcpvisord starts again");
        free(next->socket_path);
        free(next->control_socket_path);
        next->socket_path = TAKE_PTR(d->config.socket_path);
        next->control_socket_path = TAKE_PTR(d->config.control_socket_path);
        next->socket_mode = d->config.socket_mode;
}

static size_t count(json_object *summary, const char *key) {
        json_object *list;

        return json_object_object_get_ex(summary, key, &list) ? json_object_array_length(list) : 0;
}

/* "added: x; removed: y; changed: z; 3 unchanged" */
static void describe(json_object *summary, char *buf, size_t size) {
        size_t used = 0;

        buf[0] = '\0';
        for (const char *const *k = (const char *const[]){ "added", "removed", "changed", NULL }; *k && used < size; k++) {
                json_object *list;

                if (!json_object_object_get_ex(summary, *k, &list) || json_object_array_length(list) == 0)
                        continue;
                used += (size_t)snprintf(buf + used, size - used, "%s%s:", used ? "; " : "", *k);
                for (size_t i = 0; i < json_object_array_length(list) && used < size; i++)
                        used += (size_t)snprintf(buf + used, size - used, " %s",
                                                 json_object_get_string(json_object_array_get_idx(list, i)));
        }
        if (used < size)
                snprintf(buf + used, size - used, "%s%zu unchanged", used ? "; " : "", count(summary, "unchanged"));
}

/* Applies a valid configuration; next is consumed. */
static int apply(struct daemon *d, struct config *next, json_object *summary) {
        struct config old;
        int r;

        keep_sockets(d, next);
        /* The registry names with the new separator from the rebuild that the reload causes. */
        registry_set_separator(&d->registry, next->tool_name_separator);
        r = supervisor_reload(&d->supervisor, next, summary);
        if (r < 0) {
                registry_set_separator(&d->registry, d->config.tool_name_separator);
                return r;
        }
        old = d->config;
        d->config = *next;
        config_init_defaults(next);
        config_done(&old);
        d->log.max_priority = daemon_log_level(d);
        d->supervisor.max_server_message_size = d->config.max_server_message_size;
        d->supervisor.server_input_limit = d->config.server_input_limit;
        /* The policy may be another: every class and view is computed anew, and clients
         * whose lists look different through the new one are told at the window's end. */
        client_access_policy_changed(d);
        list_changes_registry_changed(&d->list_changes, CATALOG_ALL_KINDS);
        return 0;
}

int daemon_reload(struct daemon *d, const char *why, json_object **ret) {
        struct config_problems problems = { 0 };
        json_object *summary;
        struct config next;
        char text[1024];
        int r;

        *ret = NULL;
        if (d->phase != DAEMON_RUNNING)
                return -ESHUTDOWN;
        log_info(&d->log, "%s: reloading %s", why, d->source.path);
        notify_reloading(&d->notify, "reloading the configuration");
        r = config_load(d->source.path, d->source.missing_ok, &next, &problems);
        if (r == 0 && problems.errors > 0) {
                config_done(&next);
                r = -EINVAL;
        }
        log_problems(d, &problems);
        if (r < 0) {
                log_warning(&d->log, "configuration not reloaded (%zu error%s); nothing changed", problems.errors,
                            problems.errors == 1 ? "" : "s");
                *ret = problems_json(&problems);
        } else {
                summary = json_object_new_object();
                r = apply(d, &next, summary);
                config_done(&next);
                describe(summary, text, sizeof text);
                if (r < 0)
                        log_error(&d->log, "reload failed half-way: %s (%s)", strerror(-r), text);
                else
                        log_info(&d->log, "reloaded: %s", text);
                *ret = summary;
        }
        problems_done(&problems);
        notify_ready(&d->notify, r < 0 ? "configuration not reloaded; see the journal" : "reloaded");
        daemon_clients_changed(d); /* STATUS= as usual again */
        return r;
}
