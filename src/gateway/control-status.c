/* "status" on the control socket: the daemon and a row per server, for mcpvisorctl
 * status. Servers a reload removed are listed while they stop ("removed": true). Why a
 * server is where it is comes as text ("cause") and as the facts behind it ("why"), with
 * its last stderr line and where the daemon's log goes, so that mcpvisorctl can say where
 * to look next. */
#include <string.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "daemon.h"
#include "run.h"
#include "jsonrpc.h"
#include "pool.h"
#include "methods.h"
#include "time-util.h"
#include "version.h"

/* Seconds, to the millisecond: json-c would print 17 significant digits. */
static json_object *seconds_since(uint64_t then, uint64_t now) {
        double seconds = (double)((now - then) / 1000) / 1000.0;
        char text[32];

        snprintf(text, sizeof text, "%.3f", seconds);
        return json_object_new_double_s(seconds, text);
}

/* A setting in seconds as it was written: 0.3, not 0.29999999999999999. */
static json_object *seconds_setting(double seconds) {
        char text[32];

        snprintf(text, sizeof text, "%g", seconds);
        return json_object_new_double_s(seconds, text);
}

static json_object *signal_name(int sig) {
        const char *name = sigabbrev_np(sig);
        char text[32];

        snprintf(text, sizeof text, "SIG%s", name ? name : "?");
        return json_object_new_string(text);
}

/* {"status": 1} or {"signal": "SIGTERM", "coreDumped": false}, with the daemon's own
 * signal and the timeouts that led to it; NULL while the process has not ended. */
static json_object *exit_object(const struct server_exit *e) {
        json_object *o;

        if (!e->code)
                return NULL;
        o = json_object_new_object();
        if (e->code == CLD_EXITED) {
                json_object_object_add(o, "status", json_object_new_int(e->status));
        } else {
                json_object_object_add(o, "signal", signal_name(e->status));
                json_object_object_add(o, "coreDumped", json_object_new_boolean(e->code == CLD_DUMPED));
        }
        json_object_object_add(o, "byDaemon", json_object_new_boolean(server_exit_by_daemon(e)));
        if (e->reason)
                json_object_object_add(o, "reason", jsonrpc_text(e->reason));
        if (e->signal_sent) {
                json_object_object_add(o, "daemonSignal", signal_name(e->signal_sent));
                json_object_object_add(o, "stopTimeout", seconds_setting(e->stop_timeout));
                if (e->signal_sent == SIGKILL)
                        json_object_object_add(o, "killTimeout", seconds_setting(e->kill_timeout));
        }
        return o;
}

/* The facts of the last end (or of the stop under way); NULL when nothing has ended. */
static json_object *why_object(const struct server_cause *c) {
        _cleanup_free_ char *text = NULL;
        json_object *o;

        if (c->kind == SERVER_CAUSE_NONE)
                return NULL;
        text = server_cause_text(c);
        o = json_object_new_object();
        json_object_object_add(o, "kind", json_object_new_string(server_cause_kind_name(c)));
        json_object_object_add(o, "text", jsonrpc_text(text ? text : ""));
        if (c->detail)
                json_object_object_add(o, "detail", jsonrpc_text(c->detail));
        if (c->kind == SERVER_CAUSE_SPAWN)
                json_object_object_add(o, "error", json_object_new_string(strerrorname_np(c->error) ?: "?"));
        if (c->kind == SERVER_CAUSE_START_TIMEOUT)
                json_object_object_add(o, "timeout", seconds_setting(c->timeout));
        if (c->kind == SERVER_CAUSE_HEALTH)
                json_object_object_add(o, "failures", json_object_new_int64(c->failures));
        json_object_object_add(o, "exit", exit_object(&c->exit));
        return o;
}

static json_object *last_stderr_object(const struct server *s, uint64_t now) {
        uint64_t at;
        const char *line = server_last_stderr(s, &at);
        json_object *o;

        if (!line)
                return NULL;
        o = json_object_new_object();
        json_object_object_add(o, "line", jsonrpc_text(line));
        json_object_object_add(o, "since", seconds_since(at, now));
        return o;
}

static json_object *usage_number(uint64_t v) {
        return v == RUN_USAGE_UNKNOWN ? NULL : json_object_new_int64((int64_t)v);
}

/* The launcher that runs it and what it uses now, read here (a few small files); null
 * for what is not known, never a guess. */
static void add_usage(json_object *row, const struct run *in) {
        struct run_usage u = { .memory_current = RUN_USAGE_UNKNOWN, .memory_peak = RUN_USAGE_UNKNOWN,
                               .cpu_usec = RUN_USAGE_UNKNOWN, .tasks = RUN_USAGE_UNKNOWN };

        if (in && run_running(in))
                run_usage_of(in, &u);
        json_object_object_add(row, "launcher", in ? json_object_new_string(run_launcher_name(in)) : NULL);
        json_object_object_add(row, "unit", u.unit ? json_object_new_string(u.unit) : NULL);
        json_object_object_add(row, "memory", usage_number(u.memory_current));
        json_object_object_add(row, "memoryPeak", usage_number(u.memory_peak));
        json_object_object_add(row, "cpuUsec", usage_number(u.cpu_usec));
        json_object_object_add(row, "tasks", usage_number(u.tasks));
}

/* The version its last handshake spoke: initialize's, or the modern era's (handshake.c
 * describes a modern server in initialize's shape); NULL before any. */
static json_object *protocol_version(const struct server *s) {
        json_object *v;

        if (s->era == MCP_ERA_UNKNOWN || !json_object_object_get_ex(s->catalog.initialize, "protocolVersion", &v) ||
            !json_object_is_type(v, json_type_string))
                return NULL;
        return jsonrpc_text(json_object_get_string(v));
}

static json_object *server_row(const struct server *s, uint64_t now) {
        json_object *row = json_object_new_object();
        const struct run *in = s->run;
        pid_t pid = in ? run_main_pid(in) : 0;
        const struct run_ops *launcher = run_launcher_for(s);
        const char *url = launcher->url ? launcher->url(s->config) : NULL;
        _cleanup_free_ char *cause = server_cause_now(s);
        _cleanup_free_ char *end = s->last_exit.code ? server_exit_text(&s->last_exit) : NULL;

        json_object_object_add(row, "name", json_object_new_string(s->config->name));
        if (s->owner.kind != OWNER_NONE) { /* an instance (pool.h): whose */
                char owner[160];

                pool_describe_owner(&s->owner, owner, sizeof owner);
                json_object_object_add(row, "owner", json_object_new_string(owner));
        }
        json_object_object_add(row, "state", json_object_new_string(server_state_name(s->state)));
        json_object_object_add(row, "disabled", json_object_new_boolean(s->config->disabled));
        json_object_object_add(row, "era", s->era != MCP_ERA_UNKNOWN ? json_object_new_string(mcp_era_names[s->era]) : NULL);
        json_object_object_add(row, "protocolVersion", protocol_version(s));
        if (s->removed)
                json_object_object_add(row, "removed", json_object_new_boolean(true));
        json_object_object_add(row, "pid", pid ? json_object_new_int(pid) : NULL);
        if (url) /* no pid: where it is instead */
                json_object_object_add(row, "url", json_object_new_string(url));
        json_object_object_add(row, "uptime", in ? seconds_since(in->started_at, now) : NULL);
        json_object_object_add(row, "since", seconds_since(s->state_since, now));
        json_object_object_add(row, "restarts", json_object_new_int64(s->starts > 0 ? s->starts - 1 : 0));
        json_object_object_add(row, "lastExit", end ? jsonrpc_text(end) : NULL);
        json_object_object_add(row, "cause", jsonrpc_text(cause ? cause : server_state_cause(s)));
        json_object_object_add(row, "why", why_object(&s->why));
        json_object_object_add(row, "restartIn", s->state == SERVER_BACKOFF && s->restart_at > now
                                                         ? seconds_since(now, s->restart_at) /* until then */
                                                         : NULL);
        json_object_object_add(row, "lastStderr", last_stderr_object(s, now));
        /* where its log is: its own lines, or only the daemon's about it */
        json_object_object_add(row, "stderr", json_object_new_boolean(launcher->writes_stderr));
        json_object_object_add(row, "tools", json_object_new_int64((int64_t)catalog_count(&s->catalog, CATALOG_TOOLS)));
        json_object_object_add(row, "prompts", json_object_new_int64((int64_t)catalog_count(&s->catalog, CATALOG_PROMPTS)));
        json_object_object_add(row, "resources",
                               json_object_new_int64((int64_t)catalog_count(&s->catalog, CATALOG_RESOURCES)));
        json_object_object_add(row, "templates",
                               json_object_new_int64((int64_t)catalog_count(&s->catalog, CATALOG_TEMPLATES)));
        json_object_object_add(row, "inFlight", json_object_new_int64(s->in_flight));
        json_object_object_add(row, "calls", json_object_new_int64((int64_t)s->calls));
        add_usage(row, in);
        return row;
}

/* Where the daemon's records and its servers' stderr go: {"target": "journal"}, or
 * {"target": "stderr", "stderr": "/dev/pts/3"} (what its stderr is, null if unknown). */
json_object *control_log_object(const struct logger *lg) {
        json_object *o = json_object_new_object();
        _cleanup_free_ char *name = NULL;

        json_object_object_add(o, "target", json_object_new_string(lg->journal ? "journal" : "stderr"));
        if (lg->journal)
                return o;
        name = log_stderr_name();
        json_object_object_add(o, "stderr", name ? jsonrpc_text(name) : NULL);
        return o;
}

static json_object *daemon_row(const struct daemon *d, uint64_t now) {
        json_object *row = json_object_new_object();
        unsigned mcp = 0;
        const struct client *c;

        for (int st = CLIENT_ACTIVE; st <= CLIENT_DRAINING; st++)
                TAILQ_FOREACH(c, &d->clients[st], entry)
                        mcp += c->role == LISTEN_MCP;
        json_object_object_add(row, "version", json_object_new_string(MCPVISOR_VERSION));
        json_object_object_add(row, "pid", json_object_new_int(getpid()));
        json_object_object_add(row, "uptime", seconds_since(d->started_at, now));
        json_object_object_add(row, "clients", json_object_new_int64(mcp));
        json_object_object_add(row, "config", json_object_new_string(d->source.path));
        json_object_object_add(row, "log", control_log_object(&d->log));
        json_object_object_add(row, "http", http_front_listeners_json(&d->http));
        json_object_object_add(row, "httpSessions", json_object_new_int64((int64_t)d->http.n_sessions));
        return row;
}

/* The entries run as instances: how, how many now, and their bounds. */
static json_object *instanced_rows(const struct supervisor *sv) {
        json_object *rows = json_object_new_array();

        for (size_t i = 0; i < sv->n_pools; i++) {
                const struct pool *p = sv->pools[i];
                json_object *row = json_object_new_object();

                json_object_object_add(row, "name", json_object_new_string(pool_name(p)));
                json_object_object_add(row, "instances", json_object_new_string(server_instances_names[p->config->instances]));
                json_object_object_add(row, "count", json_object_new_int64((int64_t)pool_size(p)));
                json_object_object_add(row, "maxInstances", json_object_new_int64(p->config->max_instances));
                json_object_object_add(row, "spareInstances", json_object_new_int64(p->config->spare_instances));
                json_object_object_add(row, "disabled", json_object_new_boolean(p->config->disabled));
                json_object_array_add(rows, row);
        }
        return rows;
}

static void status(struct client *c, struct jsonrpc_msg *m) {
        const struct daemon *d = c->daemon;
        json_object *result = json_object_new_object(), *servers = json_object_new_array();
        uint64_t now = now_usec();

        for (size_t i = 0; i < d->supervisor.n_servers; i++)
                json_object_array_add(servers, server_row(d->supervisor.servers[i], now));
        json_object_object_add(result, "daemon", daemon_row(d, now));
        json_object_object_add(result, "servers", servers);
        json_object_object_add(result, "instanced", instanced_rows(&d->supervisor));
        client_reply_result(c, m->id, result);
}

const struct method control_status = CONTROL_METHOD("status", status);
