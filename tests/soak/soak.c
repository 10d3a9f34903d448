/* mcpvisor-soak: a bounded soak run of the built mcpvisord (see soak.h and docs/testing.md).
 *
 *   mcpvisor-soak [--duration 10m] [--clients 16] [--kill-interval 5] [--reload-interval 20] ...
 *
 * Exits 0 only if no request was lost, answered twice or answered for an unknown id, the
 * daemon never died, its descriptors came back to their start count and its RSS within the
 * tolerance once the clients had left, and it then stopped with exit 0 on SIGTERM, leaving
 * no process behind. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"

#define MAX_PRINTED_ANOMALIES 100
#define SETTLE_TIMEOUT_MS 30000
#define FD_SETTLE_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 30000

uint64_t soak_now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* xorshift64*: the run's choices follow from --seed (their timing does not). */
uint64_t soak_rand(struct soak *s) {
        s->rng ^= s->rng >> 12;
        s->rng ^= s->rng << 25;
        s->rng ^= s->rng >> 27;
        return s->rng * 0x2545F4914F6CDD1DULL;
}

double soak_uniform(struct soak *s) {
        return (double)(soak_rand(s) >> 11) / (double)(1ULL << 53);
}

bool soak_chance(struct soak *s, double p) {
        return soak_uniform(s) < p;
}

static uint64_t anomalies(const struct soak_stats *st) {
        return st->duplicates + st->unknown_ids + st->wrong_answers + st->bad_progress + st->protocol_errors;
}

void soak_anomaly(struct soak *s, uint64_t *counter, const char *fmt, ...) {
        va_list ap;

        (*counter)++;
        if (anomalies(&s->st) > MAX_PRINTED_ANOMALIES)
                return;
        fprintf(stderr, "soak: anomaly at %.1f s: ", (double)(soak_now_ms() - s->start_ms) / 1000);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        if (anomalies(&s->st) == MAX_PRINTED_ANOMALIES)
                fprintf(stderr, "soak: (further anomalies are counted, not printed)\n");
}

/* The message up to its first ';' or ':', without digits or what is between quotes. */
static void normalize(const char *message, char *out, size_t size) {
        bool quoted = false;
        size_t n = 0;

        for (const char *p = message ? message : ""; *p && *p != ';' && *p != ':' && n + 1 < size; p++) {
                if (*p == '\'')
                        quoted = !quoted;
                if ((quoted && *p != '\'') || (*p >= '0' && *p <= '9'))
                        continue;
                out[n++] = *p;
        }
        out[n] = '\0';
}

void soak_count_error(struct soak *s, const char *what, int code, const char *message) {
        struct soak_stats *st = &s->st;
        char key[sizeof st->codes[0].message];
        unsigned i;

        normalize(message, key, sizeof key);
        for (i = 0; i < st->n_codes && (st->codes[i].code != code || strcmp(st->codes[i].message, key) != 0); i++)
                ;
        if (i == st->n_codes) {
                if (st->n_codes == SOAK_MAX_CODES) {
                        i = SOAK_MAX_CODES - 1; /* the last row takes whatever does not fit */
                        snprintf(key, sizeof key, "(others)");
                } else {
                        st->n_codes++;
                }
                st->codes[i].code = code;
                snprintf(st->codes[i].message, sizeof st->codes[i].message, "%s", key);
        }
        st->codes[i].count++;
        for (unsigned k = 0; k < 3; k++) {
                if (st->codes[i].what[k] == what)
                        break;
                if (!st->codes[i].what[k]) {
                        st->codes[i].what[k] = what;
                        break;
                }
        }
}

/* ---- options ---- */

static void usage(FILE *f) {
        fprintf(f, "mcpvisor-soak [OPTIONS...]\n\n"
                   "A soak run of mcpvisord: many clients, mixed traffic, servers killed, config reloaded.\n\n"
                   "  --duration T          traffic time (default 10m; 30s, 2m, 1h or seconds)\n"
                   "  --clients N           clients connected at once (default 16)\n"
                   "  --in-flight N         requests in flight per client at most (default 8)\n"
                   "  --think-ms MS         mean pause between a client's sends (default 20)\n"
                   "  --client-life T       a client lives 1 s to T, then leaves (default 20s)\n"
                   "  --kill-interval T     mean time between SIGKILLs of a server (default 5s; 0: none)\n"
                   "  --reload-interval T   mean time between SIGHUP reloads (default 20s; 0: none)\n"
                   "  --sample-interval T   a row of the table this often (default 30s)\n"
                   "  --drain-timeout T     how long a leaving client waits for its answers (default 20s)\n"
                   "  --rss-tolerance KB    end RSS may exceed start RSS by this much (default 16384; -1: no check)\n"
                   "  --seed N              random seed (default: from the clock; printed)\n"
                   "  --daemon PATH         mcpvisord to run (default: the built one)\n"
                   "  --server PATH         mcpvisor-demo-server to run (default: the built one)\n"
                   "  --log-level LEVEL     the daemon's --log-level (default info)\n"
                   "  --keep                keep the work directory (config, daemon log)\n"
                   "  --verbose             print each kill, reload and client's departure\n");
}

/* "30s", "2m", "1h", "1.5" (seconds). */
static bool parse_duration(const char *text, double *out) {
        char *end;
        double v = strtod(text, &end);

        if (end == text || v < 0)
                return false;
        if (*end == 'm')
                v *= 60, end++;
        else if (*end == 'h')
                v *= 3600, end++;
        else if (*end == 's')
                end++;
        else if (strncmp(end, "ms", 2) == 0)
                v /= 1000, end += 2;
        if (*end)
                return false;
        *out = v;
        return true;
}

static bool parse_positive(const char *text, double *out) {
        char *end;
        double v = strtod(text, &end);

        if (end == text || *end || !(v > 0))
                return false;
        *out = v;
        return true;
}

static bool parse_unsigned(const char *text, unsigned *out) {
        char *end;
        unsigned long v = strtoul(text, &end, 10);

        if (end == text || *end || v == 0 || v > 100000)
                return false;
        *out = (unsigned)v;
        return true;
}

static int parse_options(int argc, char **argv, struct soak_options *o) {
        enum { O_DURATION = 256, O_CLIENTS, O_IN_FLIGHT, O_THINK, O_LIFE, O_KILL, O_RELOAD, O_SAMPLE, O_DRAIN, O_RSS,
               O_SEED, O_DAEMON, O_SERVER, O_LOG_LEVEL, O_KEEP, O_VERBOSE, O_HELP };
        static const struct option options[] = {
                { "duration", required_argument, NULL, O_DURATION },
                { "clients", required_argument, NULL, O_CLIENTS },
                { "in-flight", required_argument, NULL, O_IN_FLIGHT },
                { "think-ms", required_argument, NULL, O_THINK },
                { "client-life", required_argument, NULL, O_LIFE },
                { "kill-interval", required_argument, NULL, O_KILL },
                { "reload-interval", required_argument, NULL, O_RELOAD },
                { "sample-interval", required_argument, NULL, O_SAMPLE },
                { "drain-timeout", required_argument, NULL, O_DRAIN },
                { "rss-tolerance", required_argument, NULL, O_RSS },
                { "seed", required_argument, NULL, O_SEED },
                { "daemon", required_argument, NULL, O_DAEMON },
                { "server", required_argument, NULL, O_SERVER },
                { "log-level", required_argument, NULL, O_LOG_LEVEL },
                { "keep", no_argument, NULL, O_KEEP },
                { "verbose", no_argument, NULL, O_VERBOSE },
                { "help", no_argument, NULL, O_HELP },
                {},
        };
        int opt, index = -1;
        bool ok = true;

        while (ok && (opt = getopt_long(argc, argv, "", options, &index)) != -1) {
                switch (opt) {
                case O_DURATION: ok = parse_duration(optarg, &o->duration_s); break;
                case O_CLIENTS: ok = parse_unsigned(optarg, &o->clients); break;
                case O_IN_FLIGHT: ok = parse_unsigned(optarg, &o->max_in_flight); break;
                case O_THINK: ok = parse_positive(optarg, &o->think_ms); break;
                case O_LIFE: ok = parse_duration(optarg, &o->client_life_s) && o->client_life_s >= 1; break;
                case O_KILL: ok = parse_duration(optarg, &o->kill_interval_s); break;
                case O_RELOAD: ok = parse_duration(optarg, &o->reload_interval_s); break;
                case O_SAMPLE: ok = parse_duration(optarg, &o->sample_interval_s) && o->sample_interval_s >= 1; break;
                case O_DRAIN: ok = parse_duration(optarg, &o->drain_timeout_s) && o->drain_timeout_s > 0; break;
                case O_RSS: o->rss_tolerance_kb = strtol(optarg, NULL, 10); break;
                case O_SEED: o->seed = strtoul(optarg, NULL, 0); ok = o->seed != 0; break;
                case O_DAEMON: o->daemon_path = optarg; break;
                case O_SERVER: o->server_path = optarg; break;
                case O_LOG_LEVEL: o->log_level = optarg; break;
                case O_KEEP: o->keep = true; break;
                case O_VERBOSE: o->verbose = true; break;
                case O_HELP: usage(stdout); exit(0);
                default: ok = false;
                }
        }
        if (!ok && opt != '?' && index >= 0)
                fprintf(stderr, "mcpvisor-soak: bad value for --%s: %s\n", options[index].name, optarg);
        if (!ok || optind < argc) {
                usage(stderr);
                return -EINVAL;
        }
        return 0;
}

/* ---- the run's events ---- */

static void add_timer(struct event *ev, double seconds) {
        long usec = (long)(seconds * 1e6);
        struct timeval tv = { .tv_sec = usec / 1000000, .tv_usec = usec % 1000000 };

        evtimer_add(ev, &tv);
}

/* Around the mean, never in lock step with anything. */
static void add_jittered(struct soak *s, struct event *ev, double mean) {
        add_timer(ev, mean * (0.5 + soak_uniform(s)));
}

static void on_spawn(evutil_socket_t fd, short what, void *userdata) {
        struct soak *s = userdata;

        while (!s->ending && s->live < s->opt.clients)
                if (soak_client_start(s) < 0)
                        break;
}

void soak_client_gone(struct soak *s) {
        if (s->ending) {
                if (s->live == 0)
                        event_base_loopbreak(s->base);
                return;
        }
        /* A new client, a little later: connections come and go at their own pace. */
        if (!evtimer_pending(s->ev_spawn, NULL))
                add_timer(s->ev_spawn, 0.3 * soak_uniform(s));
}

static void on_kill(evutil_socket_t fd, short what, void *userdata) {
        struct soak *s = userdata;
        char name[64] = "";
        int r = soak_daemon_kill_random(s, name, sizeof name);

        if (r == 0) {
                s->st.kills++;
                if (s->opt.verbose)
                        fprintf(stderr, "soak: %.1f s: killed server %s\n", (double)(soak_now_ms() - s->start_ms) / 1000,
                                name);
        } else if (r == -ETIMEDOUT) {
                soak_anomaly(s, &s->st.protocol_errors, "the control socket did not answer status");
        }
        add_jittered(s, s->ev_kill, s->opt.kill_interval_s);
}

static void on_reload(evutil_socket_t fd, short what, void *userdata) {
        struct soak *s = userdata;
        int r = soak_daemon_reload(s, !s->variant);

        if (r < 0)
                soak_anomaly(s, &s->st.protocol_errors, "reload failed: %s", strerror(-r));
        else
                s->st.reloads++;
        if (s->opt.verbose)
                fprintf(stderr, "soak: %.1f s: reload to config %c\n", (double)(soak_now_ms() - s->start_ms) / 1000,
                        s->variant ? 'B' : 'A');
        add_jittered(s, s->ev_reload, s->opt.reload_interval_s);
}

static void print_header(void) {
        printf("%8s %7s %9s %9s %8s %8s %6s %6s %7s %9s %5s\n", "time", "clients", "sent", "results", "errors",
               "cancel", "lost", "kills", "reloads", "rss_kb", "fds");
}

static void print_row(struct soak *s, const char *label) {
        char when[16];

        if (label)
                snprintf(when, sizeof when, "%s", label);
        else
                snprintf(when, sizeof when, "%.0fs", (double)(soak_now_ms() - s->start_ms) / 1000);
        printf("%8s %7u %9llu %9llu %8llu %8llu %6llu %6llu %7llu %9ld %5d\n", when, s->live,
               (unsigned long long)s->st.sent, (unsigned long long)s->st.results, (unsigned long long)s->st.errors,
               (unsigned long long)s->st.cancelled, (unsigned long long)s->st.lost, (unsigned long long)s->st.kills,
               (unsigned long long)s->st.reloads, s->series.last.rss_kb, s->series.last.fds);
        fflush(stdout);
}

static void record_sample(struct soak *s, const struct soak_sample *x) {
        struct soak_series *z = &s->series;

        if (z->n++ == 0) {
                z->start = z->min = z->max = *x;
        } else {
                z->min.rss_kb = x->rss_kb < z->min.rss_kb ? x->rss_kb : z->min.rss_kb;
                z->min.fds = x->fds < z->min.fds ? x->fds : z->min.fds;
                z->max.rss_kb = x->rss_kb > z->max.rss_kb ? x->rss_kb : z->max.rss_kb;
                z->max.fds = x->fds > z->max.fds ? x->fds : z->max.fds;
        }
        z->last = *x;
}

static void on_sample(evutil_socket_t fd, short what, void *userdata) {
        struct soak *s = userdata;
        struct soak_sample x;

        if (soak_daemon_sample(s, &x) == 0)
                record_sample(s, &x);
        if (soak_now_ms() >= s->next_row_ms) {
                print_row(s, NULL);
                s->next_row_ms += (uint64_t)(s->opt.sample_interval_s * 1000);
        }
        add_timer(s->ev_sample, 1);
}

static void on_daemon_exit(evutil_socket_t fd, short what, void *userdata) {
        struct soak *s = userdata;

        soak_daemon_reap(s);
        fprintf(stderr, "soak: the daemon exited during the run (wait status 0x%x)\n", s->d.wait_status);
        s->failed_early = true;
        event_base_loopbreak(s->base);
}

static void on_hard_end(evutil_socket_t fd, short what, void *userdata) {
        struct soak *s = userdata;

        fprintf(stderr, "soak: clients still connected past the drain deadline\n");
        soak_clients_abort(s);
        event_base_loopbreak(s->base);
}

/* The duration passed: no more kills, reloads or new clients; every client leaves in a way
 * that is still owed every answer. */
static void on_end(evutil_socket_t fd, short what, void *userdata) {
        struct soak *s = userdata;

        s->ending = true;
        evtimer_del(s->ev_kill);
        evtimer_del(s->ev_reload);
        evtimer_del(s->ev_spawn);
        soak_clients_end(s);
        if (s->live == 0)
                event_base_loopbreak(s->base);
        add_timer(s->ev_hard_end, s->opt.drain_timeout_s + 10);
}

/* Ctrl-C: the daemon and its servers must not outlive the run. */
static void on_interrupt(evutil_socket_t sig, short what, void *userdata) {
        struct soak *s = userdata;

        fprintf(stderr, "soak: %s: stopping the daemon\n", strsignal((int)sig));
        s->interrupted = true;
        soak_clients_abort(s);
        event_base_loopbreak(s->base);
}

static int setup_events(struct soak *s) {
        s->base = event_base_new();
        if (!s->base)
                return -ENOMEM;
        s->ev_end = evtimer_new(s->base, on_end, s);
        s->ev_kill = evtimer_new(s->base, on_kill, s);
        s->ev_reload = evtimer_new(s->base, on_reload, s);
        s->ev_sample = evtimer_new(s->base, on_sample, s);
        s->ev_spawn = evtimer_new(s->base, on_spawn, s);
        s->ev_hard_end = evtimer_new(s->base, on_hard_end, s);
        s->ev_daemon = event_new(s->base, s->d.pidfd, EV_READ, on_daemon_exit, s);
        s->ev_int = evsignal_new(s->base, SIGINT, on_interrupt, s);
        s->ev_term = evsignal_new(s->base, SIGTERM, on_interrupt, s);
        if (!s->ev_end || !s->ev_kill || !s->ev_reload || !s->ev_sample || !s->ev_spawn || !s->ev_hard_end ||
            !s->ev_daemon || !s->ev_int || !s->ev_term)
                return -ENOMEM;
        event_add(s->ev_int, NULL);
        event_add(s->ev_term, NULL);
        add_timer(s->ev_end, s->opt.duration_s);
        if (s->opt.kill_interval_s > 0)
                add_jittered(s, s->ev_kill, s->opt.kill_interval_s);
        if (s->opt.reload_interval_s > 0)
                add_jittered(s, s->ev_reload, s->opt.reload_interval_s);
        add_timer(s->ev_sample, 1);
        event_add(s->ev_daemon, NULL);
        event_active(s->ev_spawn, EV_TIMEOUT, 0);
        return 0;
}

static void free_events(struct soak *s) {
        struct event *evs[] = { s->ev_end,      s->ev_kill,   s->ev_reload, s->ev_sample, s->ev_spawn,
                                s->ev_hard_end, s->ev_daemon, s->ev_int,    s->ev_term };

        for (size_t i = 0; i < sizeof evs / sizeof *evs; i++)
                if (evs[i])
                        event_free(evs[i]);
        if (s->base)
                event_base_free(s->base);
}

/* ---- before and after ---- */

/* The descriptor count once it holds still: the control connection that just asked for the
 * status may not be closed by the daemon yet. */
static bool stable_sample(struct soak *s, struct soak_sample *x, int want_fds, int timeout_ms) {
        uint64_t deadline = soak_now_ms() + (uint64_t)timeout_ms;
        struct soak_sample prev = { -1, -1 };

        for (;;) {
                if (soak_daemon_sample(s, x) < 0)
                        return false;
                if (want_fds >= 0 ? x->fds == want_fds : x->fds == prev.fds)
                        return true;
                if (soak_now_ms() >= deadline)
                        return false;
                prev = *x;
                poll(NULL, 0, 200); /* /proc has nothing to wait on */
        }
}

static void print_errors(const struct soak_stats *st) {
        for (unsigned i = 0; i < st->n_codes; i++)
                printf("    %8llu x %6d  %-60s (%s%s%s%s%s)\n", (unsigned long long)st->codes[i].count,
                       st->codes[i].code, st->codes[i].message, st->codes[i].what[0],
                       st->codes[i].what[1] ? ", " : "", st->codes[i].what[1] ? st->codes[i].what[1] : "",
                       st->codes[i].what[2] ? ", " : "", st->codes[i].what[2] ? st->codes[i].what[2] : "");
}

static void print_summary(struct soak *s, double seconds) {
        const struct soak_stats *st = &s->st;
        const struct soak_series *z = &s->series;

        printf("\nrequests: %llu sent in %.0f s (%.0f/s): %llu results (%llu tool errors), %llu errors, "
               "%llu cancelled (%llu of them answered anyway), %llu dropped with an abrupt close, %llu lost\n",
               (unsigned long long)st->sent, seconds, seconds > 0 ? (double)st->sent / seconds : 0,
               (unsigned long long)st->results, (unsigned long long)st->tool_errors, (unsigned long long)st->errors,
               (unsigned long long)st->cancelled, (unsigned long long)st->cancelled_answered,
               (unsigned long long)st->abandoned, (unsigned long long)st->lost);
        printf("errors by code and message (numbers and quoted names left out; the first requests that got it):\n");
        print_errors(st);
        printf("progress: %llu, other notifications: %llu, server requests answered: %llu (%llu came back in the "
               "tool's result)\n",
               (unsigned long long)st->progress, (unsigned long long)st->notifications, (unsigned long long)st->upcalls,
               (unsigned long long)st->upcalls_completed);
        printf("clients: %llu connected; left: %llu graceful, %llu half-close, %llu cancelling, %llu abrupt\n",
               (unsigned long long)st->connects, (unsigned long long)st->leaves_graceful,
               (unsigned long long)st->leaves_half_close, (unsigned long long)st->leaves_cancel,
               (unsigned long long)st->leaves_abrupt);
        printf("faults: %llu servers killed, %llu reloads\n", (unsigned long long)st->kills,
               (unsigned long long)st->reloads);
        printf("anomalies: %llu duplicate answers, %llu unknown ids, %llu wrong answers, %llu bad progress, "
               "%llu other\n",
               (unsigned long long)st->duplicates, (unsigned long long)st->unknown_ids,
               (unsigned long long)st->wrong_answers, (unsigned long long)st->bad_progress,
               (unsigned long long)st->protocol_errors);
        printf("daemon:   %10s %10s %10s %10s\n", "start", "min", "max", "end");
        printf("  rss_kb  %10ld %10ld %10ld %10ld\n", z->start.rss_kb, z->min.rss_kb, z->max.rss_kb, z->last.rss_kb);
        printf("  fds     %10d %10d %10d %10d\n", z->start.fds, z->min.fds, z->max.fds, z->last.fds);
}

struct verdict {
        bool ok;
};

static void check(struct verdict *v, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(struct verdict *v, bool ok, const char *fmt, ...) {
        va_list ap;

        printf("%s: ", ok ? "ok  " : "FAIL");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        v->ok = v->ok && ok;
}

/* A run long enough to see every kind of event must have seen each: a soak that did
 * nothing would otherwise pass. */
static void check_coverage(struct soak *s, struct verdict *v) {
        const struct soak_stats *st = &s->st;

        if (s->opt.duration_s < 10)
                return;
        check(v, st->results > 0 && st->errors > 0 && st->cancelled > 0 && st->progress > 0 && st->upcalls_completed > 0,
              "traffic seen: results, errors, cancellations, progress and server requests answered");
        if (s->opt.kill_interval_s > 0 && s->opt.duration_s >= 3 * s->opt.kill_interval_s)
                check(v, st->kills > 0, "servers were killed (%llu)", (unsigned long long)st->kills);
        if (s->opt.reload_interval_s > 0 && s->opt.duration_s >= 3 * s->opt.reload_interval_s)
                check(v, st->reloads > 0, "the config was reloaded (%llu)", (unsigned long long)st->reloads);
}

static void final_checks(struct soak *s, const struct soak_sample *baseline, char *baseline_fds, struct verdict *v) {
        const struct soak_stats *st = &s->st;
        struct soak_sample end = { -1, -1 };
        char why[200] = "";
        bool settled;

        check(v, st->lost == 0, "no request lost (%llu)", (unsigned long long)st->lost);
        check(v, st->duplicates == 0 && st->unknown_ids == 0, "no answer twice or for an unknown id (%llu, %llu)",
              (unsigned long long)st->duplicates, (unsigned long long)st->unknown_ids);
        check(v, anomalies(st) == 0, "no anomaly (%llu)", (unsigned long long)anomalies(st));
        check_coverage(s, v);

        /* Back to config A, every server ready, no client, nothing in flight. */
        if (s->variant != 0 && soak_daemon_reload(s, 0) < 0)
                check(v, false, "reload to config A at the end");
        settled = soak_daemon_settled(s, 0, SETTLE_TIMEOUT_MS, why, sizeof why);
        check(v, settled, "the daemon settled: config A, all servers ready, no client, nothing in flight%s%s",
              settled ? "" : ": ", settled ? "" : why);
        stable_sample(s, &end, baseline->fds, FD_SETTLE_TIMEOUT_MS);
        if (end.fds >= 0)
                record_sample(s, &end);
        check(v, end.fds == baseline->fds, "descriptors back to the start count (%d at start, %d at the end)",
              baseline->fds, end.fds);
        if (end.fds != baseline->fds) {
                char *now = soak_daemon_fd_list(s);
                fprintf(stderr, "soak: descriptors at the start:\n%s", baseline_fds);
                fprintf(stderr, "soak: descriptors at the end:\n%s", now);
                free(now);
        }
        if (s->opt.rss_tolerance_kb < 0)
                printf("skip: RSS not compared (--rss-tolerance -1): %ld kB at start, %ld kB at the end\n",
                       baseline->rss_kb, end.rss_kb);
        else
                check(v, end.rss_kb >= 0 && end.rss_kb <= baseline->rss_kb + s->opt.rss_tolerance_kb,
                      "RSS back near the start (%ld kB at start, %ld kB at the end, tolerance %ld kB)", baseline->rss_kb,
                      end.rss_kb, s->opt.rss_tolerance_kb);
}

static void defaults(struct soak_options *o) {
        *o = (struct soak_options){
                .duration_s = 600,
                .clients = 16,
                .max_in_flight = 8,
                .think_ms = 20,
                .client_life_s = 20,
                .kill_interval_s = 5,
                .reload_interval_s = 20,
                .sample_interval_s = 30,
                .drain_timeout_s = 20,
                .rss_tolerance_kb = 16384,
                .seed = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16),
                .daemon_path = MCPVISORD_PATH,
                .server_path = MCPVISOR_DEMO_SERVER_PATH,
                .log_level = "info",
        };
}

int main(int argc, char **argv) {
        struct soak s = { .d.pidfd = -1 };
        struct soak_sample baseline;
        struct verdict v = { .ok = true };
        char why[200] = "", *baseline_fds = NULL;
        double seconds;
        bool stopped;
        int r;

        defaults(&s.opt);
        if (parse_options(argc, argv, &s.opt) < 0)
                return 2;
        s.rng = s.opt.seed;
        LIST_INIT(&s.clients);
        signal(SIGPIPE, SIG_IGN);
        /* Whatever the daemon leaves behind when it exits becomes ours to find. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                fprintf(stderr, "soak: cannot become a subreaper: %s\n", strerror(errno));

        printf("soak: %.0f s, %u clients (%u in flight each), a kill every ~%.1f s, a reload every ~%.1f s, seed %lu\n",
               s.opt.duration_s, s.opt.clients, s.opt.max_in_flight, s.opt.kill_interval_s, s.opt.reload_interval_s,
               s.opt.seed);
        r = soak_daemon_start(&s);
        if (r < 0) {
                fprintf(stderr, "soak: cannot start %s: %s\n", s.opt.daemon_path, strerror(-r));
                return 1;
        }
        printf("soak: daemon pid %d, work directory %s\n", (int)s.d.pid, s.d.dir);
        if (!soak_daemon_settled(&s, 0, SETTLE_TIMEOUT_MS, why, sizeof why) || !stable_sample(&s, &baseline, -1, 5000)) {
                fprintf(stderr, "soak: the daemon did not come up: %s\n", why);
                soak_daemon_log_tail(&s, 40);
                soak_daemon_stop(&s, STOP_TIMEOUT_MS);
                soak_daemon_cleanup(&s, true);
                return 1;
        }
        record_sample(&s, &baseline);
        baseline_fds = soak_daemon_fd_list(&s);

        s.start_ms = soak_now_ms();
        s.next_row_ms = s.start_ms + (uint64_t)(s.opt.sample_interval_s * 1000);
        print_header();
        print_row(&s, "start");
        if (setup_events(&s) < 0) {
                fprintf(stderr, "soak: out of memory\n");
                return 1;
        }
        event_base_dispatch(s.base);
        seconds = (double)(soak_now_ms() - s.start_ms) / 1000;
        /* libevent closes a freed bufferevent's socket in a finalizer of the next loop
         * iteration: without it the last client's connection would stay open. */
        event_base_loop(s.base, EVLOOP_NONBLOCK);
        free_events(&s);

        if (s.failed_early) {
                check(&v, false, "the daemon stayed up");
        } else if (s.interrupted) {
                check(&v, false, "the run was not interrupted");
        } else {
                final_checks(&s, &baseline, baseline_fds, &v);
                print_row(&s, "end");
        }
        print_summary(&s, seconds);
        stopped = !s.failed_early && soak_daemon_stop(&s, STOP_TIMEOUT_MS);
        check(&v, stopped, "SIGTERM: the daemon exited 0 (wait status 0x%x)", s.d.wait_status);
        check(&v, soak_leftovers(&s, stdout) == 0, "no process left behind");
        if (!v.ok)
                soak_daemon_log_tail(&s, 60);
        printf("soak: %s (seed %lu)%s%s\n", v.ok ? "PASS" : "FAIL", s.opt.seed, v.ok && !s.opt.keep ? "" : "; kept ",
               v.ok && !s.opt.keep ? "" : s.d.dir);
        soak_daemon_cleanup(&s, s.opt.keep || !v.ok);
        free(baseline_fds);
        return v.ok ? 0 : 1;
}
