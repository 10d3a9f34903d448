/* Reload: the configuration read again and applied while running (SIGHUP, systemctl
 * reload, mcpvisorctl reload). The files are read and checked off the loop
 * (config-reader.c); the result is applied on the loop, in one turn: a configuration with
 * any error changes nothing; otherwise servers are added, removed, restarted or left alone
 * (supervisor_reload), the settings that can change live do, and clients stay connected
 * and hear list_changed. What is set up once at start (the sockets, the HTTP addresses)
 * stays: each such setting changed is named, in the log and in the answer. */
#include "reload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-http.h"
#include "daemon.h"
#include "macro.h"
#include "mcp-logging.h"
#include "methods.h"

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

struct restart_report {
        struct daemon *d;
        json_object *keys;
};

static void restart_needed(const char *key, const char *note, void *userdata) {
        struct restart_report *rr = userdata;

        log_notice(&rr->d->log, "%s changed; %s", key, note ? note : "it takes effect when mcpvisord starts again");
        json_object_array_add(rr->keys, json_object_new_string(key));
}

/* What is set up once, at start (the sockets, the HTTP front door's addresses), stays as it
 * is; each such setting that changed is named in the log and in the summary's
 * "restartNeeded". The command line's socket paths win over the file's, as at startup. */
static int keep_restart_settings(struct daemon *d, struct config *next, bool manager_waits, json_object *summary) {
        json_object *list = json_object_new_array();

        if (!list)
                return -ENOMEM;
        if (d->source.socket_path && !(next->socket_path = (free(next->socket_path), strdup(d->source.socket_path))))
                return json_object_put(list), -ENOMEM;
        if (d->source.control_socket_path &&
            !(next->control_socket_path = (free(next->control_socket_path), strdup(d->source.control_socket_path))))
                return json_object_put(list), -ENOMEM;
        config_keep_restart_settings(next, &d->config, restart_needed, &(struct restart_report){ d, list });
        /* Not a setting's value but what it needs: the connection made at start. */
        if (manager_waits)
                restart_needed("launcher",
                               "servers with launcher \"systemd\" need the connection to the service manager, which "
                               "mcpvisord makes at start when its configuration names that launcher: they start once "
                               "mcpvisord starts again",
                               &(struct restart_report){ d, list });
        json_object_object_add(summary, "restartNeeded", list);
        return 0;
}

static size_t count(json_object *summary, const char *key) {
        json_object *list;

        return json_object_object_get_ex(summary, key, &list) ? json_object_array_length(list) : 0;
}

/* "added: x; removed: y; changed: z; 3 unchanged; restartNeeded: http.listen" */
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
                used += (size_t)snprintf(buf + used, size - used, "%s%zu unchanged", used ? "; " : "",
                                         count(summary, "unchanged"));
        if (used < size && count(summary, "restartNeeded") > 0) {
                json_object *list = json_object_object_get(summary, "restartNeeded");

                used += (size_t)snprintf(buf + used, size - used, "; waiting for a restart:");
                for (size_t i = 0; i < json_object_array_length(list) && used < size; i++)
                        used += (size_t)snprintf(buf + used, size - used, " %s",
                                                 json_object_get_string(json_object_array_get_idx(list, i)));
        }
}

/* Applies a valid configuration; next is consumed. */
static int apply(struct daemon *d, struct config *next, json_object *summary) {
        /* Read before supervisor_reload() takes the servers' entries out of next. */
        bool manager_waits = supervisor_manager_waits_for_restart(&d->supervisor, next);
        struct config old;
        int r;

        /* The registry names with the new separator from the rebuild that the reload causes. */
        registry_set_separator(&d->registry, next->tool_name_separator);
        r = supervisor_reload(&d->supervisor, next, summary);
        if (r < 0) {
                registry_set_separator(&d->registry, d->config.tool_name_separator);
                return r;
        }
        r = keep_restart_settings(d, next, manager_waits, summary);
        if (r < 0)
                return r;
        old = d->config;
        d->config = *next;
        config_init_defaults(next);
        /* HTTP sessions find their tokens in the new configuration while the old one, which
         * their tokens are in, is still there. */
        client_http_config_changed(d);
        http_front_config_changed(&d->http);
        config_done(&old);
        d->log.max_priority = daemon_log_level(d);
        d->supervisor.max_server_message_size = d->config.max_server_message_size;
        d->supervisor.server_input_limit = d->config.server_input_limit;
        /* The policy may be another: every class and view is computed anew, and clients
         * whose lists look different through the new one are told at the window's end. */
        client_access_policy_changed(d);
        mcp_logging_changed(d); /* who hears from which server may have changed */
        list_changes_registry_changed(&d->list_changes, CATALOG_ALL_KINDS);
        return 0;
}

/* How many states there are: enum reload_state names no count, so the switch of
 * daemon_reload() names every state it has. */
#define RELOAD_STATES (RELOAD_READING_AGAIN + 1)

static const char *const state_names[RELOAD_STATES] = {
        [RELOAD_IDLE] = "idle",
        [RELOAD_READING] = "reading",
        [RELOAD_READING_AGAIN] = "reading again",
};

/* What may follow what: a read starts from idle, or once the last one is applied when
 * another was asked for meanwhile; one is asked for again only while one runs; any read in
 * progress may end in idle. */
static const bool moves[RELOAD_STATES][RELOAD_STATES] = {
        [RELOAD_IDLE] = { [RELOAD_READING] = true },
        [RELOAD_READING] = { [RELOAD_IDLE] = true, [RELOAD_READING_AGAIN] = true },
        [RELOAD_READING_AGAIN] = { [RELOAD_IDLE] = true, [RELOAD_READING] = true },
};

/* The only writer of the reload's state. A move the table does not allow is a bug of the
 * daemon's, stopped hard as server.c does rather than run on with reads nobody tracks.
 * Not assert(): release builds keep it. */
static void set_state(struct daemon *d, enum reload_state next) {
        struct reload *rl = &d->reload;

        if (!moves[rl->state][next]) {
                log_emit(&d->log, LOG_CRIT, NULL, "bug: reload: from %s to %s", state_names[rl->state],
                         state_names[next]);
                abort();
        }
        rl->state = next;
}

/* A read's outcome, logged, and applied when valid (read is consumed). Returns what a
 * control client is answered: 0 and the summary of what changed in *ret, or negative and
 * {"problems": [...]} (or NULL) in *ret. */
static int take_read(struct daemon *d, struct config_read *read, json_object **ret) {
        json_object *summary;
        char text[1024];
        int r = read->r;

        if (r == 0 && read->problems.errors > 0)
                r = -EINVAL;
        log_problems(d, &read->problems);
        if (r < 0) {
                log_warning(&d->log, "configuration not reloaded (%zu error%s); nothing changed", read->problems.errors,
                            read->problems.errors == 1 ? "" : "s");
                *ret = problems_json(&read->problems);
        } else {
                summary = json_object_new_object();
                r = apply(d, &read->config, summary);
                describe(summary, text, sizeof text);
                if (r < 0)
                        log_error(&d->log, "reload failed half-way: %s (%s)", strerror(-r), text);
                else
                        log_info(&d->log, "reloaded: %s", text);
                *ret = summary;
        }
        config_read_done(read);
        return r;
}

static void waiter_free(struct daemon *d, struct reload_waiter *w) {
        TAILQ_REMOVE(&d->reload.waiters, w, entry);
        json_object_put(w->id);
        free(w);
}

/* outcome is consumed. */
static void answer(struct daemon *d, struct reload_waiter *w, int r, json_object *outcome) {
        struct client *c = w->client;

        control_reload_answer(c, w->id, r, outcome);
        waiter_free(d, w);
        client_request_done(c);
}

/* Every control client whose request came before read started. */
static void answer_read(struct daemon *d, uint64_t read, int r, json_object *outcome) {
        struct reload_waiter *w, *next;

        for (w = TAILQ_FIRST(&d->reload.waiters); w; w = next) {
                next = TAILQ_NEXT(w, entry);
                if (w->read <= read)
                        answer(d, w, r, json_object_get(outcome));
        }
}

/* False when c was answered at once instead (maxInFlight, out of memory). */
static bool wait_for(struct daemon *d, struct client *c, json_object *id, uint64_t read) {
        struct reload_waiter *w;

        if (!client_hold_request(c, id))
                return false;
        w = calloc(1, sizeof *w);
        if (!w) {
                control_reload_answer(c, id, -ENOMEM, NULL);
                client_request_done(c);
                return false;
        }
        *w = (struct reload_waiter){ .client = c, .id = json_object_get(id), .read = read };
        TAILQ_INSERT_TAIL(&d->reload.waiters, w, entry);
        return true;
}

static void start_read(struct daemon *d) {
        struct reload *rl = &d->reload;
        int r;

        rl->reads++;
        r = config_reader_start(&rl->reader, d->source.path, d->source.missing_ok);
        if (r < 0)
                log_warning(&d->log, "cannot start a thread to read the configuration (%s); read in the loop's instead",
                            strerror(-r));
        set_state(d, RELOAD_READING);
}

/* The loop's turn once a read is over: applied, systemd told (READY=1 once no read is left
 * to do) before its askers are answered (ExecReload= ends with that answer), and the next
 * read started if one was asked for meanwhile. */
static void on_read_over(struct config_read *read, void *userdata) {
        struct daemon *d = userdata;
        json_object *outcome = NULL;
        bool again;
        int r;

        if (d->phase != DAEMON_RUNNING) { /* its askers were told (reload_stopping) */
                config_read_done(read);
                set_state(d, RELOAD_IDLE);
                return;
        }
        r = take_read(d, read, &outcome);
        again = d->reload.state == RELOAD_READING_AGAIN;
        if (!again) {
                set_state(d, RELOAD_IDLE);
                notify_ready(&d->notify, r < 0 ? "configuration not reloaded; see the journal" : "reloaded");
                daemon_clients_changed(d); /* STATUS= as usual again */
        }
        answer_read(d, d->reload.reads, r, outcome);
        json_object_put(outcome);
        if (again) {
                log_info(&d->log, "reloading %s again: asked for while the last read ran", d->source.path);
                start_read(d);
        }
}

int reload_init(struct daemon *d) {
        TAILQ_INIT(&d->reload.waiters);
        return config_reader_init(&d->reload.reader, d->base, on_read_over, d);
}

void daemon_reload(struct daemon *d, const char *why, struct client *asker, json_object *id) {
        struct reload *rl = &d->reload;

        if (d->phase != DAEMON_RUNNING) {
                if (asker)
                        control_reload_answer(asker, id, -ESHUTDOWN, NULL);
                return;
        }
        /* Its answer is the read that starts after this request: the one below, or the next. */
        if (asker && !wait_for(d, asker, id, rl->reads + 1))
                return;
        switch (rl->state) {
        case RELOAD_IDLE:
                log_info(&d->log, "%s: reloading %s", why, d->source.path);
                notify_reloading(&d->notify, "reloading the configuration");
                start_read(d);
                break;
        case RELOAD_READING:
                set_state(d, RELOAD_READING_AGAIN);
                /* fall through */
        case RELOAD_READING_AGAIN:
                log_info(&d->log, "%s: a read of the configuration is under way; reading it again once that one is applied",
                         why);
                break;
        }
}

void reload_stopping(struct daemon *d) {
        struct reload_waiter *w;

        if (d->reload.state != RELOAD_IDLE)
                log_info(&d->log, "the reload under way is given up");
        while ((w = TAILQ_FIRST(&d->reload.waiters)))
                answer(d, w, -ESHUTDOWN, NULL);
}

void reload_client_gone(struct daemon *d, struct client *c) {
        struct reload_waiter *w, *next;

        for (w = TAILQ_FIRST(&d->reload.waiters); w; w = next) {
                next = TAILQ_NEXT(w, entry);
                if (w->client == c)
                        waiter_free(d, w);
        }
}

void reload_done(struct daemon *d) {
        struct reload_waiter *w;

        config_reader_done(&d->reload.reader);
        while ((w = TAILQ_FIRST(&d->reload.waiters)))
                waiter_free(d, w);
}
