/* mcpvisorctl logs [-f] [-n N] NAME: a server's last lines. When the daemon logs to the
 * journal (under systemd), they are read from the journal, its records under the server's
 * own name (SYSLOG_IDENTIFIER= and MCPVISOR_SERVER=: its stderr and log messages); else,
 * or when the journal shows this user none of them, the lines the daemon keeps (its "logs"
 * answer: the last 20 or so of its stderr). -f follows: the journal as it grows, or the
 * daemon asked again every 250 ms for the lines past the last one shown.
 *
 * Also ctl_logs_print_kept(), for status NAME. */
#include "ctl-logs.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <time.h>

#include "ctl-connection.h"
#include "ctl-format.h"
#include "ctl-status.h"
#include "ctl.h"
#include "time-util.h"

#define FOLLOW_INTERVAL_MS 250
#define DEFAULT_LINES 20

/* "Nov 29 02:16:11 " (local time), as journalctl's short output begins. */
static void put_time(uint64_t realtime_usec, FILE *out) {
        time_t t = (time_t)(realtime_usec / USEC_PER_SEC);
        struct tm tm;
        char text[32];

        if (!localtime_r(&t, &tm) || strftime(text, sizeof text, "%b %d %H:%M:%S ", &tm) == 0)
                snprintf(text, sizeof text, "%llu ", (unsigned long long)t);
        fputs(text, out);
}

static void put_line(uint64_t realtime_usec, const char *text, const char *indent, FILE *out) {
        fputs(indent, out);
        put_time(realtime_usec, out);
        ctl_format_text(text, out);
        fputc('\n', out);
}

static json_object *lines_of(json_object *answer) {
        json_object *v;

        if (!json_object_object_get_ex(answer, "lines", &v) || !json_object_is_type(v, json_type_array))
                return NULL;
        return v;
}

/* The last n of the answer's lines (all of them when n is 0). */
static void print_kept(json_object *answer, size_t n, const char *indent, FILE *out) {
        json_object *lines = lines_of(answer);
        size_t count = lines ? json_object_array_length(lines) : 0;

        if (ctl_json_int(answer, "missed", 0) > 0)
                fprintf(out, "%s-- %lld lines not kept --\n", indent, (long long)ctl_json_int(answer, "missed", 0));
        for (size_t i = n && count > n ? count - n : 0; i < count; i++) {
                json_object *l = json_object_array_get_idx(lines, i);

                put_line((uint64_t)(ctl_json_double(l, "time", 0) * 1e6), ctl_json_str(l, "text") ?: "", indent, out);
        }
}

/* The daemon's "logs" answer for name, lines past after; NULL after printing why. */
static json_object *fetch(struct ctl_conn *c, const char *name, uint64_t after, uint64_t timeout) {
        _cleanup_json_ json_object *params = json_object_new_object(), *result = NULL, *error = NULL;

        if (!params)
                return NULL;
        json_object_object_add(params, "name", json_object_new_string(name));
        if (after > 0)
                json_object_object_add(params, "after", json_object_new_int64((int64_t)after));
        if (ctl_call(c, "logs", params, timeout, &result, &error) < 0)
                return NULL;
        if (error) {
                ctl_print_daemon_error(error);
                return NULL;
        }
        if (!lines_of(result)) {
                fprintf(stderr, CTL_NAME ": the daemon's logs answer has no lines: %.200s\n",
                        json_object_to_json_string_ext(result, JSON_C_TO_STRING_PLAIN));
                return NULL;
        }
        return TAKE_PTR(result);
}

int ctl_logs_print_kept(struct ctl_conn *c, const char *name, uint64_t timeout, const char *indent, FILE *out) {
        _cleanup_json_ json_object *answer = fetch(c, name, 0, timeout);

        if (!answer)
                return -EREMOTEIO;
        if (json_object_array_length(lines_of(answer)) == 0)
                return 0;
        fprintf(out, "\n%s, the last lines of its stderr:\n", name);
        print_kept(answer, 0, indent, out);
        return 0;
}

static bool logs_to_journal(json_object *answer) {
        json_object *log = NULL;
        const char *target;

        json_object_object_get_ex(answer, "log", &log);
        target = ctl_json_str(log, "target");
        return target && strcmp(target, "journal") == 0;
}

static int journal_match(sd_journal *j, const char *field, const char *name) {
        _cleanup_free_ char *match = NULL;

        if (asprintf(&match, "%s=%s", field, name) < 0)
                return -ENOMEM;
        return sd_journal_add_match(j, match, 0);
}

static int print_current(sd_journal *j) {
        _cleanup_free_ char *text = NULL;
        const void *data;
        uint64_t usec = 0;
        size_t len;

        if (sd_journal_get_data(j, "MESSAGE", &data, &len) < 0 || len < 8)
                return 0;
        text = strndup((const char *)data + 8, len - 8);
        if (!text)
                return -ENOMEM;
        (void)sd_journal_get_realtime_usec(j, &usec);
        put_line(usec, text, "", stdout);
        return 1;
}

/* Prints the records after the one j stands on; returns how many. */
static int print_next(sd_journal *j) {
        int n = 0, r;

        while ((r = sd_journal_next(j)) > 0) {
                int k = print_current(j);

                if (k < 0)
                        return k;
                n += k;
        }
        fflush(stdout);
        return r < 0 ? r : n;
}

/* The journal's last n records of the server, then what comes, when follow and either some
 * were shown or nothing else is to be shown (kept: the daemon keeps lines). Returns how
 * many it printed before following, or a negative errno when the journal cannot be read. */
static int show_journal(const char *name, unsigned n, bool follow, bool kept) {
        sd_journal *j = NULL;
        int r, shown = 0;

        r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
        if (r < 0)
                return r;
        if ((r = journal_match(j, "SYSLOG_IDENTIFIER", name)) < 0 || (r = journal_match(j, "MCPVISOR_SERVER", name)) < 0 ||
            (r = sd_journal_seek_tail(j)) < 0 || (r = sd_journal_previous_skip(j, n)) < 0) {
                sd_journal_close(j);
                return r;
        }
        /* previous_skip stands on the oldest record to show */
        if (r > 0) {
                shown = print_current(j);
                if (shown >= 0)
                        shown = (r = print_next(j)) < 0 ? r : shown + r;
        }
        while (follow && shown >= 0 && (shown > 0 || !kept)) {
                r = sd_journal_wait(j, (uint64_t)-1);
                if (r < 0 || (r = print_next(j)) < 0)
                        break;
                shown += r;
        }
        fflush(stdout);
        sd_journal_close(j);
        return shown;
}

/* The daemon's kept lines, asked for again and again. Returns on a failure only. */
static int follow_kept(struct ctl_conn *c, const char *name, json_object *first, uint64_t timeout) {
        uint64_t after = (uint64_t)ctl_json_int(first, "last", 0);

        for (;;) {
                _cleanup_json_ json_object *answer = NULL;
                uint64_t last;

                (void)poll(NULL, 0, FOLLOW_INTERVAL_MS);
                answer = fetch(c, name, after, timeout);
                if (!answer)
                        return CTL_EXIT_FAILURE;
                last = (uint64_t)ctl_json_int(answer, "last", 0);
                if (last < after) { /* a reload made the server anew: its lines start again */
                        json_object_put(answer);
                        answer = fetch(c, name, 0, timeout);
                        if (!answer)
                                return CTL_EXIT_FAILURE;
                }
                print_kept(answer, 0, "", stdout);
                fflush(stdout);
                after = (uint64_t)ctl_json_int(answer, "last", 0);
        }
}

static int run_logs(struct ctl *ctl, int argc, char **argv) {
        _cleanup_json_ json_object *answer = NULL;
        const char *path = ctl_control_path(ctl), *name = argv[0];
        unsigned n = ctl->lines ? ctl->lines : DEFAULT_LINES;
        struct ctl_conn c;
        int r;

        if (!path || ctl_conn_open(&c, path, ctl->timeout_usec) < 0)
                return CTL_EXIT_FAILURE;
        answer = fetch(&c, name, 0, ctl->timeout_usec);
        if (!answer) {
                ctl_conn_done(&c);
                return CTL_EXIT_FAILURE;
        }
        if (logs_to_journal(answer)) {
                r = show_journal(name, n, ctl->follow, json_object_array_length(lines_of(answer)) > 0);
                if (r > 0 || (r == 0 && json_object_array_length(lines_of(answer)) == 0)) {
                        ctl_conn_done(&c);
                        return CTL_EXIT_OK;
                }
                if (r < 0)
                        fprintf(stderr, CTL_NAME ": cannot read the journal (%s); the lines mcpvisord keeps:\n", strerror(-r));
                else
                        fprintf(stderr, CTL_NAME ": the journal shows no record of %s (none written yet, or none you "
                                        "may read: members of systemd-journal or adm may); the lines mcpvisord keeps:\n", name);
        }
        print_kept(answer, n, "", stdout);
        fflush(stdout);
        r = ctl->follow ? follow_kept(&c, name, answer, ctl->timeout_usec) : CTL_EXIT_OK;
        ctl_conn_done(&c);
        return r;
}

const struct ctl_command ctl_cmd_logs = {
        .name = "logs",
        .synopsis = "[-f] [-n N] NAME",
        .summary = "a server's last lines (-f: follow)",
        .min_args = 1,
        .max_args = 1,
        .options = CTL_OPT_TIMEOUT | CTL_OPT_FOLLOW | CTL_OPT_LINES,
        .run = run_logs,
};
