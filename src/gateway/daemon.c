/* The daemon context: startup order, the loop, and shutdown as a polled phase. */
#include "daemon.h"

#include <assert.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>

#include "client-http.h"
#include "client-instances.h"
#include "client-socket.h"
#include "control-access.h"
#include "jsonrpc.h"
#include "list-wait.h"
#include "sub-listen.h"
#include "mcp-logging.h"
#include "methods.h"
#include "paths.h"
#include "process.h"
#include "signin-elicit.h"
#include "time-util.h"

static void on_accept(struct listener *l, int fd, const struct ucred *peer, void *userdata);

/* Events that spawn servers have a priority of their own (process.h): after each of them
 * the loop polls again and runs what came meanwhile first. */
static struct event_base *new_base(void) {
        struct event_config *cfg = event_config_new();
        struct event_base *base;

        if (!cfg)
                return NULL;
        (void)event_config_set_max_dispatch_interval(cfg, NULL, 1, EVENT_PRIORITY_SPAWN);
        base = event_base_new_with_config(cfg);
        event_config_free(cfg);
        if (base && event_base_priority_init(base, EVENT_PRIORITIES) < 0) {
                event_base_free(base);
                return NULL;
        }
        return base;
}

static const char *role_name(enum listen_role role) {
        return role == LISTEN_CONTROL ? "control" : "mcp";
}

static void servers_status(struct daemon *d, char *buf, size_t size) {
        if (d->supervisor.n_servers == 0 && d->supervisor.n_pools == 0)
                snprintf(buf, size, "no servers configured");
        else
                supervisor_status(&d->supervisor, buf, size);
}

static void idle_exit(evutil_socket_t fd, short what, void *userdata) {
        struct daemon *d = userdata;
        char why[96];

        snprintf(why, sizeof why, "no clients for %g s (idleExit)", d->config.idle_exit);
        daemon_stop(d, why);
}

/* idleExit counts from the moment the last client left, only under socket activation:
 * the next connection starts the daemon again. */
static void update_idle_timer(struct daemon *d, unsigned open) {
        struct timeval tv;

        if (d->phase != DAEMON_RUNNING || !d->activated || d->config.idle_exit <= 0 || open > 0) {
                event_del(d->idle_timer);
                return;
        }
        if (evtimer_pending(d->idle_timer, NULL))
                return;
        tv = timeval_from_seconds(d->config.idle_exit);
        evtimer_add(d->idle_timer, &tv);
}

/* A server's change goes out at once (what an operator, a script or the bench waits on); a
 * change of the client count alone waits for the status timer, as one-request clients (each
 * modern HTTP request) come and go by thousands a second (notify.h). */
static void send_status(struct daemon *d) {
        unsigned open = d->client_count[CLIENT_ACTIVE] + d->client_count[CLIENT_DRAINING];
        char servers[sizeof d->status_servers];
        bool servers_changed;

        if (d->phase != DAEMON_RUNNING && d->phase != DAEMON_STOPPING)
                return;
        update_idle_timer(d, open);
        servers_status(d, servers, sizeof servers);
        servers_changed = strcmp(servers, d->status_servers) != 0;
        if (servers_changed)
                memcpy(d->status_servers, servers, sizeof servers);
        if (d->phase != DAEMON_RUNNING)
                notify_status(&d->notify, "stopping; %s; %u client%s still draining", servers, open,
                              open == 1 ? "" : "s");
        else if (servers_changed)
                notify_status(&d->notify, "%s; %u client%s connected", servers, open, open == 1 ? "" : "s");
        else
                notify_status_soon(&d->notify, "%s; %u client%s connected", servers, open, open == 1 ? "" : "s");
}

struct event_base *daemon_event_base(struct daemon *d) {
        return d->base;
}

struct jsonrpc_parser *daemon_parser(struct daemon *d) {
        return &d->parser;
}

const struct config *daemon_config(const struct daemon *d) {
        return &d->config;
}

struct logger *daemon_logger(struct daemon *d) {
        return &d->log;
}

struct supervisor *daemon_supervisor(struct daemon *d) {
        return &d->supervisor;
}

struct registry *daemon_registry(struct daemon *d) {
        return &d->registry;
}

struct router *daemon_router(struct daemon *d) {
        return &d->router;
}

struct server_requests *daemon_server_requests(struct daemon *d) {
        return &d->server_requests;
}

struct mrtr *daemon_mrtr(struct daemon *d) {
        return &d->mrtr;
}

struct subscriptions *daemon_subscriptions(struct daemon *d) {
        return &d->subscriptions;
}

struct list_waits *daemon_list_waits(struct daemon *d) {
        return &d->list_waits;
}

struct list_changes *daemon_list_changes(struct daemon *d) {
        return &d->list_changes;
}

void daemon_clients_changed(struct daemon *d) {
        d->status_due = true;
}

static void status_settled(struct daemon *d) {
        if (!d->status_due)
                return;
        d->status_due = false;
        send_status(d);
}

unsigned daemon_broadcast_to(struct daemon *d, const char *method, json_object *params,
                             bool (*wants)(struct client *c, void *arg), void *arg) {
        return daemon_broadcast_related(d, method, params, wants, NULL, arg);
}

unsigned daemon_broadcast_related(struct daemon *d, const char *method, json_object *params,
                                  bool (*wants)(struct client *c, void *arg),
                                  json_object *(*related)(struct client *c, void *arg), void *arg) {
        struct client *c, *next;
        unsigned sent = 0;

        /* A client that does not read is dropped by client_send(), which moves it to the
         * list of clients to free: the next one is taken before. */
        for (c = TAILQ_FIRST(&d->clients[CLIENT_ACTIVE]); c; c = next) {
                next = TAILQ_NEXT(c, entry);
                if (c->role == LISTEN_MCP && c->session.phase == SESSION_OPERATING && (!wants || wants(c, arg))) {
                        client_send_related(c, jsonrpc_notification(method, json_object_get(params)),
                                            related ? related(c, arg) : NULL);
                        sent++;
                }
        }
        json_object_put(params);
        return sent;
}

/* A server changed state: what clients see may have changed with it. The registry
 * rebuilds the kinds marked when next read, clients hear of it from list-changes.c at the
 * end of its window, and what walks every server (waiting lists, STATUS=) is done once per
 * loop iteration (servers_settled), however many servers changed in it. */
static void on_servers_changed(const struct server *s, unsigned kinds, bool dropped, void *userdata) {
        struct daemon *d = userdata;
        bool instance = s && s->owner.kind != OWNER_NONE;

        /* An instance is in its owners' registries only (client-instances.h): the shared
         * one and its views stay as they are. */
        if (!instance)
                registry_mark(&d->registry, kinds);
        else if (kinds)
                mcp_logging_changed(d); /* a spare handed over hears its owner's level */
        client_instances_changed(d, kinds);
        list_changes_registry_changed(&d->list_changes, kinds);
        server_requests_sweep(&d->server_requests);
        d->servers_changed = true;
        d->registry_dropped |= dropped && !instance;
}

static void servers_settled(struct daemon *d) {
        if (!d->servers_changed)
                return;
        d->servers_changed = false;
        /* The lists still hold the items of a server that left them, or of its replaced
         * catalog: let them go now, before a restart brings its new catalog, rather than
         * hold two catalogues until the next read. */
        if (d->registry_dropped)
                (void)registry_sync(&d->registry);
        d->registry_dropped = false;
        list_waiters_flush(&d->list_waits);
        d->status_due = true;
}

/* The shared registry's servers: instances are in their owners' (client-instances.h). */
static struct server *const *registry_servers(void *userdata, size_t *ret_n) {
        return supervisor_shared(userdata, ret_n);
}

static void on_server_notification(struct server *s, struct jsonrpc_msg *m, void *userdata) {
        struct daemon *d = userdata;

        if (router_child_notification(&d->router, s, m))
                return;
        if (strcmp(m->method, "notifications/message") == 0) {
                mcp_logging_forward(d, s, m);
                return;
        }
        if (strcmp(m->method, "notifications/resources/updated") == 0) {
                subscriptions_updated(&d->subscriptions, s, m);
                return;
        }
        server_requests_child_notification(&d->server_requests, s, m);
}

static void on_server_request(struct server *s, struct jsonrpc_msg *m, void *userdata) {
        struct daemon *d = userdata;

        server_requests_forward(&d->server_requests, s, m);
}

static void on_server_ready(struct server *s, void *userdata) {
        struct daemon *d = userdata;

        mcp_logging_server_ready(d, s);
        subscriptions_server_ready(&d->subscriptions, s);
}

static void on_server_removed(struct server *s, void *userdata) {
        struct daemon *d = userdata;

        subscriptions_server_gone(&d->subscriptions, s);
        server_requests_server_gone(&d->server_requests, s);
        if (s->in_flight > 0) /* its routes were answered when its process ended */
                server_log(s, LOG_ERR, "freed with %u requests in flight", s->in_flight);
}

static const struct supervisor_ops supervisor_ops = {
        .changed = on_servers_changed,
        .notification = on_server_notification,
        .request = on_server_request,
        .removed = on_server_removed,
        .ready = on_server_ready,
};

/* Shutdown is a phase the loop polls, so no object is torn down under its own callback.
 * Clients drain (bounded by shutdownTimeout) while servers close in parallel (each
 * bounded by its own stopTimeout and killTimeout). */
static void check_stopped(struct daemon *d) {
        if (d->phase != DAEMON_STOPPING)
                return;
        if (d->client_count[CLIENT_ACTIVE] + d->client_count[CLIENT_DRAINING] == 0 && supervisor_idle(&d->supervisor))
                d->phase = DAEMON_EXIT;
}

static void stop_deadline_passed(evutil_socket_t fd, short what, void *userdata) {
        struct daemon *d = userdata;
        unsigned open = d->client_count[CLIENT_ACTIVE] + d->client_count[CLIENT_DRAINING];
        struct client *c;

        if (open == 0)
                return;
        log_warning(&d->log, "clients took longer than %.1f s to drain; closing %u remaining client%s",
                    d->config.shutdown_timeout, open, open == 1 ? "" : "s");
        for (int s = CLIENT_ACTIVE; s <= CLIENT_DRAINING; s++)
                while ((c = TAILQ_FIRST(&d->clients[s])))
                        client_set_state(c, CLIENT_JUSTFREE);
}

void daemon_stop(struct daemon *d, const char *why) {
        struct client *c;

        if (d->phase == DAEMON_STOPPING) {
                log_notice(&d->log, "%s again while stopping; exiting now", why);
                d->phase = DAEMON_EXIT;
                return;
        }
        if (d->phase != DAEMON_RUNNING)
                return;
        d->phase = DAEMON_STOPPING;
        log_info(&d->log, "%s: stopping", why);
        notify_stopping(&d->notify, "stopping");
        reload_stopping(d);
        for (int r = 0; r < LISTEN_ROLE_COUNT; r++)
                listener_stop(&d->listeners[r]);
        http_front_stop_listening(&d->http);
        while ((c = TAILQ_FIRST(&d->clients[CLIENT_ACTIVE])))
                client_drain(c); /* moves it off the active list */
        supervisor_stop_all(&d->supervisor);

        struct timeval tv = timeval_from_seconds(d->config.shutdown_timeout);
        event_add(d->stop_deadline, &tv);
        daemon_clients_changed(d);
}

static void on_signal(evutil_socket_t sig, short what, void *userdata) {
        struct daemon *d = userdata;

        switch (sig) {
        case SIGTERM:
        case SIGINT:
                daemon_stop(d, sig == SIGTERM ? "SIGTERM" : "SIGINT");
                break;
        case SIGHUP:
                daemon_reload(d, "SIGHUP", NULL, NULL); /* the outcome is logged there */
                break;
        }
}

static int setup_signals(struct daemon *d) {
        static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };

        static_assert(ARRAY_SIZE(sigs) == ARRAY_SIZE(d->signals), "one event per handled signal");
        for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
                d->signals[i] = evsignal_new(d->base, sigs[i], on_signal, d);
                if (!d->signals[i] || event_add(d->signals[i], NULL) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Socket-activated: take the passed fds by name. Returns 0 if none were passed. */
static int take_activated(struct daemon *d, struct activated_fds *ret) {
        char **names = NULL;
        int n = sd_listen_fds_with_names(1, &names), r = 0;
        const char *why = NULL;

        if (n < 0) {
                log_error(&d->log, "cannot read the sockets passed by systemd: %s", strerror(-n));
                return n;
        }
        if (n > 0) {
                int fds[n];
                for (int i = 0; i < n; i++)
                        fds[i] = SD_LISTEN_FDS_START + i;
                r = listen_pick_activated((unsigned)n, fds, names, ret, &why);
                if (r < 0)
                        log_error(&d->log, "unusable socket activation: %s", why);
                else
                        r = 1;
        }
        for (int i = 0; names && i < n; i++)
                free(names[i]);
        free(names);
        return r;
}

static int bind_own(struct daemon *d, enum listen_role role, const char *path) {
        int r = listen_bind_unix(path, d->config.socket_mode, &d->bound[role]);

        if (r == -EADDRINUSE)
                log_error(&d->log, "another mcpvisord is already listening on %s; refusing to start", path);
        else if (r == -EEXIST)
                log_error(&d->log, "%s exists and is not a socket; refusing to replace it", path);
        else if (r < 0)
                log_error(&d->log, "cannot listen on %s: %s", path, strerror(-r));
        return r;
}

/* What an MCP client turned away for lack of descriptors reads before the close. */
#define FD_SHORTAGE_REFUSAL \
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":" \
        "\"mcpvisord is out of file descriptors for new clients; try again later\"}}\n"

/* MCP clients leave a reserve of descriptors to the control socket and to server starts, so
 * that operators can still act and servers restart however many clients connect. */
static int start_listener(struct daemon *d, enum listen_role role, int fd, const char *where) {
        struct listener *l = &d->listeners[role];
        int r = listener_start(l, d->base, fd, role_name(role), &d->log, on_accept, d);
        if (r < 0) {
                log_error(&d->log, "cannot watch the %s socket: %s", role_name(role), strerror(-r));
                return r;
        }
        if (role == LISTEN_MCP)
                listener_set_reserve(l, listen_fd_reserve(l->fd_limit), FD_SHORTAGE_REFUSAL);
        log_info(&d->log, "listening for %s clients on %s", role_name(role), where);
        return 0;
}

static int setup_sockets(struct daemon *d) {
        static const char *const default_names[] = { "mcp.sock", "control.sock" };
        const char *configured[] = { d->config.socket_path, d->config.control_socket_path };
        struct activated_fds act = { .fd = { -1, -1 } };
        int r = take_activated(d, &act);

        if (r < 0)
                return r;
        d->activated = r > 0;
        for (int role = 0; role < LISTEN_ROLE_COUNT; role++) {
                _cleanup_free_ char *fallback = NULL;
                const char *path = configured[role];

                if (d->activated) {
                        if (act.fd[role] >= 0 && (r = start_listener(d, role, act.fd[role], "the socket passed by systemd")) < 0)
                                return r;
                        continue;
                }
                /* A daemon given its MCP socket keeps its control socket beside it: in the
                 * default place it would be another daemon's. */
                if (!path && role == LISTEN_CONTROL && configured[LISTEN_MCP])
                        path = fallback = path_control_beside(configured[LISTEN_MCP]);
                if (!path)
                        path = fallback = path_default_socket(default_names[role]);
                if (!path) {
                        log_error(&d->log, "no %s socket path: pass --%s PATH or set XDG_RUNTIME_DIR",
                                  role_name(role), role == LISTEN_MCP ? "socket" : "control-socket");
                        return -ENOENT;
                }
                r = bind_own(d, role, path);
                if (r < 0)
                        return r;
                r = start_listener(d, role, d->bound[role].fd, path);
                if (r < 0)
                        return r;
        }
        r = http_front_start(&d->http, d, act.http, act.n_http);
        if (r < 0)
                return r;
        if (d->activated && act.fd[LISTEN_MCP] < 0)
                log_notice(&d->log, "socket-activated without an mcp socket; only the control socket is served");
        d->id = d->activated ? (act.fd[LISTEN_MCP] >= 0 ? listen_socket_path(act.fd[LISTEN_MCP]) : NULL)
                             : strdup(d->bound[LISTEN_MCP].path);
        return 0;
}

/* One JSON-RPC error line (id null) for a connection turned away, with the limit in data. */
static char *refusal_line(const char *message, const char *setting, unsigned limit) {
        json_object *data = json_object_new_object(), *e;
        char *line = NULL;

        json_object_object_add(data, setting, json_object_new_int64(limit));
        e = jsonrpc_error(NULL, JSONRPC_INTERNAL_ERROR, message, data);
        if (asprintf(&line, "%s\n", json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN)) < 0)
                line = NULL;
        json_object_put(e);
        return line;
}

enum user_count_verdict daemon_count_client(struct daemon *d, uid_t uid) {
        unsigned limit = d->config.max_clients_per_user;
        struct user_idle *ended;
        enum user_count_verdict v = user_counts_take(&d->user_counts, uid, limit, &ended);

        if (v != USER_COUNT_TAKEN_ENDING)
                return v;
        client_http_end_idle(ended, limit);
        return USER_COUNT_TAKEN;
}

/* maxClientsPerUser: one local user cannot take every connection. A connection past it
 * (when none of the user's HTTP sessions is idle) reads one error line and is closed; the
 * first of each run of them is logged. */
static bool count_user(struct daemon *d, int fd, uid_t uid) {
        unsigned limit = d->config.max_clients_per_user;
        _cleanup_free_ char *line = NULL;
        char message[200];

        switch (daemon_count_client(d, uid)) {
        case USER_COUNT_TAKEN:
        case USER_COUNT_TAKEN_ENDING:
                return true;
        case USER_COUNT_NO_MEMORY:
                log_warning(&d->log, "out of memory accepting a client; connection closed");
                close(fd);
                return false;
        case USER_COUNT_OVER:
                log_warning(&d->log, "uid %u has %u MCP connections (maxClientsPerUser); turning away more until one closes",
                            (unsigned)uid, limit);
                break;
        case USER_COUNT_OVER_AGAIN:
                break;
        }
        snprintf(message, sizeof message,
                 "too many connections for uid %u (maxClientsPerUser %u); close one before connecting again",
                 (unsigned)uid, limit);
        listen_turn_away(fd, line = refusal_line(message, "maxClientsPerUser", limit));
        return false;
}

/* How many descriptors are open now; 64, a guess above the daemon's own, if /proc says not. */
static int count_open_fds(void) {
        _cleanup_(closedirp) DIR *dir = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0;

        if (!dir)
                return 64;
        while ((de = readdir(dir)))
                n += de->d_name[0] != '.';
        return n - 1; /* the directory's own */
}

/* Descriptors a server's run holds: its stdin, stdout and stderr pipes and its pidfd. */
#define SERVER_RUN_FDS 4

/* The listener's check sees the new descriptor's number, which a freed lower one (a
 * crashed server's, during its restart delay) hides: counted instead, MCP clients leave
 * every configured server its descriptors beside the reserve, so restarts do not fail for
 * clients that keep connecting. */
static bool room_for_client(struct daemon *d, int fd) {
        const struct listener *l = &d->listeners[LISTEN_MCP];
        long room = (long)l->fd_limit - l->reserve - d->fds_at_start - (long)SERVER_RUN_FDS * (long)d->supervisor.n_servers;

        if (l->reserve == 0 || (long)d->user_counts.total < room) {
                d->fd_refusing = false;
                return true;
        }
        if (!d->fd_refusing)
                log_warning(&d->log, "%zu MCP clients leave no more descriptors than the %d kept for the control socket "
                            "and %zu servers' restarts (limit %d); turning away new clients of the mcp socket",
                            d->user_counts.total, l->reserve, d->supervisor.n_servers, l->fd_limit);
        d->fd_refusing = true;
        listen_turn_away(fd, FD_SHORTAGE_REFUSAL);
        return false;
}

static void on_accept(struct listener *l, int fd, const struct ucred *peer, void *userdata) {
        struct daemon *d = userdata;
        enum listen_role role = (enum listen_role)(l - d->listeners);
        char why[256];
        struct client *c;

        if (role == LISTEN_MCP && (!room_for_client(d, fd) || !count_user(d, fd, peer->uid)))
                return;
        c = client_socket_new(d, fd, peer, role);
        if (!c) {
                if (role == LISTEN_MCP)
                        user_counts_release(&d->user_counts, peer->uid);
                log_warning(&d->log, "out of memory accepting a client; connection closed");
                return;
        }
        if (role == LISTEN_CONTROL && !control_access_allowed(d->config.control_group, client_principal(c), why, sizeof why)) {
                /* One answer saying why, then the connection closes. */
                client_log(c, LOG_NOTICE, "refused control connection from uid %u (pid %d)", (unsigned)peer->uid,
                           (int)peer->pid);
                client_reply_error(c, NULL, CONTROL_PERMISSION_DENIED, why, NULL);
                client_drain(c);
        }
}

/* systemd's default soft limit of 1024 descriptors is far below the clients we serve. */
static void raise_fd_limit(struct daemon *d) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug(&d->log, "cannot raise the descriptor limit: %s", strerror(errno));
}

int daemon_log_level(const struct daemon *d) {
        if (d->source.log_level >= 0)
                return d->source.log_level;
        return d->config.log_level >= 0 ? d->config.log_level : LOG_INFO;
}

int daemon_init(struct daemon *d, struct config *config, const struct config_source *source) {
        int r;

        *d = (struct daemon){ .config = *config, .source = *source, .phase = DAEMON_STARTING, .exit_code = 0,
                              .started_at = now_usec() };
        /* The daemon owns it now; the caller's copy must not free what it points to. */
        config_init_defaults(config);
        TAILQ_INIT(&d->list_waits.queue);
        user_counts_init(&d->user_counts);
        subscriptions_init(&d->subscriptions);
        TAILQ_INIT(&d->router.live);
        TAILQ_INIT(&d->router.lost);
        TAILQ_INIT(&d->server_requests.pending);
        TAILQ_INIT(&d->mrtr.rounds);
        for (int s = 0; s < CLIENT_STATE_COUNT; s++)
                TAILQ_INIT(&d->clients[s]);
        TAILQ_INIT(&d->clients_ended);
        for (int role = 0; role < LISTEN_ROLE_COUNT; role++)
                d->bound[role] = (struct bound_socket){ .fd = -1, .lock_fd = -1 };
        logger_init(&d->log, daemon_log_level(d));
        raise_fd_limit(d);

        d->base = new_base();
        if (!d->base)
                return -ENOMEM;
        d->stop_deadline = evtimer_new(d->base, stop_deadline_passed, d);
        d->idle_timer = evtimer_new(d->base, idle_exit, d);
        if (!d->stop_deadline || !d->idle_timer || jsonrpc_parser_init(&d->parser) < 0 ||
            list_changes_init(&d->list_changes, d->base, d) < 0)
                return -ENOMEM;
        r = reload_init(d);
        if (r < 0) {
                log_error(&d->log, "cannot set up reloading: %s", strerror(-r));
                return r;
        }
        r = setup_signals(d);
        if (r < 0)
                return r;
        r = setup_sockets(d);
        if (r < 0)
                return r;
        r = notify_init(&d->notify, d->base, &d->log);
        if (r < 0)
                return r;
        registry_init(&d->registry, &d->log, d->config.tool_name_separator);
        registry_set_source(&d->registry, &(struct registry_source){ .servers = registry_servers, .userdata = &d->supervisor });
        views_init(&d->views, &d->config.access, &d->registry);
        router_init(&d->router, d->base, &d->log);
        router_set_audit(&d->router, &d->config.audit);
        server_requests_init(&d->server_requests, d, &d->router, &d->log);
        r = mrtr_init(&d->mrtr, d, d->base, &d->log);
        if (r < 0)
                return r;
        r = supervisor_init(&d->supervisor, d->base, &d->log, &d->parser, &d->config, &supervisor_ops, d);
        if (r < 0) {
                log_error(&d->log, "cannot set up server supervision: %s", strerror(-r));
                return r;
        }
        /* Activated too: a unit outlives the daemon's cgroup, and the next daemon finds a
         * dead one's units by this mark. */
        if (d->id)
                supervisor_mark(&d->supervisor, d->id);
        /* Before counting descriptors: the bus's is the daemon's for good. */
        supervisor_connect_manager(&d->supervisor, d->config.launcher, d->id);
        d->fds_at_start = count_open_fds();
        /* Socket-activated, systemd owns the paths and the unit's cgroup ends what we leave. */
        if (!d->activated)
                supervisor_claim(&d->supervisor, d->bound[LISTEN_MCP].path);
        d->phase = DAEMON_RUNNING;
        /* Servers are spawned one a loop turn from the first turn on (supervisor.h); their
         * handshakes finish on the loop, and STATUS= follows them. */
        supervisor_start_all(&d->supervisor);
        char servers[512];
        servers_status(d, servers, sizeof servers);
        notify_ready(&d->notify, servers);
        daemon_clients_changed(d);
        log_info(&d->log, "mcpvisord ready");
        return 0;
}

/* The daemon learns here that a client is gone, and tells the modules that keep something
 * of it before it is freed: its calls are cancelled downstream first. */
static void client_gone(struct daemon *d, struct client *c) {
        client_log(c, client_life_priority(c), "client disconnected");
        router_client_gone(&d->router, c);
        server_requests_client_gone(&d->server_requests, c);
        list_waiters_client_gone(&d->list_waits, c);
        reload_client_gone(d, c);
        control_login_client_gone(d, c);
        signin_elicit_client_gone(d, c);
        subscriptions_client_gone(&d->subscriptions, c);
        sub_listen_client_gone(c);
        mcp_logging_client_gone(c);
        if (c->role == LISTEN_MCP)
                user_counts_release(&d->user_counts, client_principal(c)->uid);
        /* After the count: its user's last client leaving starts its instances' idle time. */
        client_instances_gone(c);
        client_free(c);
}

void daemon_client_draining(struct daemon *d, struct client *c) {
        server_requests_client_gone(&d->server_requests, c);
        sub_listen_end(c);
}

/* Clients closed in one burst are freed a batch per loop iteration, and the next one
 * does not wait: what another client sent meanwhile is answered between batches. */
#define CLIENTS_FREED_PER_ITERATION 256

static void free_closed_clients(struct daemon *d) {
        struct client *c;

        for (unsigned n = 0; n < CLIENTS_FREED_PER_ITERATION && (c = TAILQ_FIRST(&d->clients[CLIENT_JUSTFREE])); n++)
                client_gone(d, c);
}

static void read_ended_clients(struct daemon *d) {
        struct client *c;

        for (unsigned n = 0; n < CLIENT_ENDS_PER_ITERATION && (c = TAILQ_FIRST(&d->clients_ended)); n++)
                client_read_end(c);
}

int daemon_iterate(struct daemon *d, int loop_flags) {
        if (!TAILQ_EMPTY(&d->clients[CLIENT_JUSTFREE]) || !TAILQ_EMPTY(&d->clients_ended))
                loop_flags |= EVLOOP_NONBLOCK;
        if (event_base_loop(d->base, loop_flags) < 0) {
                log_error(&d->log, "event loop failed");
                return -EIO;
        }
        read_ended_clients(d);
        router_collect(&d->router);
        free_closed_clients(d);
        supervisor_collect(&d->supervisor);
        servers_settled(d);
        mcp_logging_settle(d);
        status_settled(d);
        check_stopped(d);
        return 0;
}

int daemon_run(struct daemon *d) {
        while (d->phase != DAEMON_EXIT) {
                int r = daemon_iterate(d, EVLOOP_ONCE);

                if (r < 0)
                        return r;
        }
        log_info(&d->log, "stopped");
        return 0;
}

void daemon_done(struct daemon *d) {
        for (int s = 0; s < CLIENT_STATE_COUNT; s++) {
                struct client *c;
                while ((c = TAILQ_FIRST(&d->clients[s])))
                        client_gone(d, c);
        }
        signin_elicit_done(d); /* before the supervisor, whose curl loop its sign-ins use */
        reload_done(d); /* before the loop it watches */
        http_front_done(&d->http); /* after its sessions, which it files */
        user_counts_done(&d->user_counts);
        for (int role = 0; role < LISTEN_ROLE_COUNT; role++) {
                listener_stop(&d->listeners[role]);
                if (d->bound[role].path)
                        bound_socket_done(&d->bound[role]);
        }
        if (d->supervisor.base)
                supervisor_done(&d->supervisor);
        free(d->id);
        d->id = NULL;
        server_requests_done(&d->server_requests);
        router_done(&d->router);
        mrtr_done(&d->mrtr);
        views_done(&d->views);
        registry_done(&d->registry);
        list_waiters_done(&d->list_waits);
        list_changes_done(&d->list_changes);
        subscriptions_done(&d->subscriptions);
        for (size_t i = 0; i < ARRAY_SIZE(d->signals); i++)
                if (d->signals[i])
                        event_free(d->signals[i]);
        if (d->stop_deadline)
                event_free(d->stop_deadline);
        if (d->idle_timer)
                event_free(d->idle_timer);
        config_done(&d->config);
        notify_done(&d->notify);
        jsonrpc_parser_done(&d->parser);
        if (d->base)
                event_base_free(d->base);
        d->base = NULL;
}
