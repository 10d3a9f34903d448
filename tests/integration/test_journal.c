/* Native journal logging: when stderr is the journal ($JOURNAL_STREAM matches fd 2), the
 * daemon sends structured records instead of text lines. The test stands in for journald
 * (h_fake_journald), or, for mcpvisorctl logs, which reads the journal with sd-journal,
 * runs a real one in a mount namespace of its own. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl-proc.h"
#include "harness.h"

static struct h_daemon D;
static int journal_fd = -1;

/* Every record received so far, each as sent (native fields may hold any byte). */
static struct record {
        char *data;
        size_t len;
} records[4096];
static size_t n_records, next_record; /* record_with() looks from next_record on */

static void fake_journald(void) {
        journal_fd = h_fake_journald();
}

static void stop(void) {
        for (size_t i = 0; i < n_records; i++)
                free(records[i].data);
        n_records = next_record = 0;
        h_log_dump_if_verbose(&D);
        h_teardown_expect(h_cleanup(&D), "the daemon did not stop with exit status 0");
}

/* Receives one record into records[], waiting until the deadline; false if none came. */
static bool receive(long long deadline) {
        static char buf[65536];
        struct pollfd p = { journal_fd, POLLIN, 0 };
        ssize_t n;

        if (poll(&p, 1, (int)(deadline > h_now_ms() ? deadline - h_now_ms() : 0)) <= 0)
                return false;
        n = recv(journal_fd, buf, sizeof buf, 0);
        if (n <= 0)
                return true;
        cr_assert_lt(n_records, sizeof records / sizeof records[0], "more records than the test keeps");
        records[n_records].data = malloc((size_t)n);
        cr_assert_not_null(records[n_records].data);
        memcpy(records[n_records].data, buf, (size_t)n);
        records[n_records++].len = (size_t)n;
        return true;
}

static bool has(const struct record *r, const char *needle) {
        return memmem(r->data, r->len, needle, strlen(needle)) != NULL;
}

/* Waits for a record containing every needle (each a "FIELD=value" line), after the one the
 * last call found. */
static bool record_with(const char *const *needles, int timeout_ms) {
        long long deadline = h_now_ms() + timeout_ms;

        for (;;) {
                for (; next_record < n_records; next_record++) {
                        bool all = true;

                        for (const char *const *s = needles; *s && all; s++)
                                all = has(&records[next_record], *s);
                        if (all) {
                                next_record++;
                                return true;
                        }
                }
                if (!receive(deadline))
                        return false;
        }
}

/* The first record received so far that contains needle, or NULL. */
static const struct record *any_record_with(const char *needle) {
        for (size_t i = 0; i < n_records; i++)
                if (has(&records[i], needle))
                        return &records[i];
        return NULL;
}

Test(journal, structured_records_with_client_field, .init = fake_journald, .fini = stop, .timeout = 30) {
        h_start(&D, &(struct h_opts){ .journal_stream = true });
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        cr_assert(record_with((const char *[]){ "SYSLOG_IDENTIFIER=mcpvisord\n", "PRIORITY=6\n",
                                                "MESSAGE=mcpvisord ready\n", NULL }, H_TIMEOUT_MS),
                  "no native record for the ready message");
        struct h_conn *c = h_connect(D.sock, H_TIMEOUT_MS);
        cr_assert(record_with((const char *[]){ "MCPVISOR_CLIENT=1\n", "MESSAGE=[client 1] MCP client connected (pid", NULL },
                              H_TIMEOUT_MS),
                  "no record carrying MCPVISOR_CLIENT=");
        h_close(c);
        /* and nothing went to stderr as text */
        cr_assert_not(h_log_wait(&D, "mcpvisord: info:", 0), "text lines on stderr although it is the journal");
}

Test(journal, text_when_journal_stream_does_not_match, .init = fake_journald, .fini = stop, .timeout = 30) {
        h_start(&D, NULL);
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        cr_assert(h_log_wait(&D, "mcpvisord: info: mcpvisord ready", H_TIMEOUT_MS));
}

/* A server's stderr lines are records of its own: journalctl -t NAME and
 * journalctl MCPVISOR_SERVER=NAME both find them; "<3>" sets the priority. */
Test(journal, server_stderr_under_its_own_name, .init = fake_journald, .fini = stop, .timeout = 30) {
        char config[1024];

        snprintf(config, sizeof config, "{\"mcpServers\":{\"jtest\":{\"command\":\"%s\",\"args\":[\"--stderr\",\"hello journal\"]}}}",
                 h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(record_with((const char *[]){ "SYSLOG_IDENTIFIER=jtest\n", "MCPVISOR_SERVER=jtest\n",
                                                "MESSAGE=hello journal\n", "PRIORITY=6\n", NULL }, H_TIMEOUT_MS),
                  "no record of the server's stderr line under its name");
}

Test(journal, server_stderr_priority_prefix, .init = fake_journald, .fini = stop, .timeout = 30) {
        char config[512];

        snprintf(config, sizeof config, "{\"mcpServers\":{\"jwarn\":{\"command\":\"%s\",\"args\":[\"--stderr\",\"<3>it broke\"]}}}",
                 h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(record_with((const char *[]){ "SYSLOG_IDENTIFIER=jwarn\n", "MESSAGE=it broke\n", "PRIORITY=3\n", NULL },
                              H_TIMEOUT_MS),
                  "the <3> prefix did not become PRIORITY=3");
}

/* State changes carry the server's name too, so journalctl MCPVISOR_SERVER=NAME tells its story. */
Test(journal, state_changes_carry_the_server, .init = fake_journald, .fini = stop, .timeout = 30) {
        char config[512];

        snprintf(config, sizeof config, "{\"mcpServers\":{\"jstate\":{\"command\":\"%s\"}}}", h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(record_with((const char *[]){ "SYSLOG_IDENTIFIER=mcpvisord\n", "MCPVISOR_SERVER=jstate\n",
                                                "MESSAGE=[jstate] starting -> ready", NULL }, H_TIMEOUT_MS),
                  "no ready record with MCPVISOR_SERVER=");
}

/* An audit record is a record of its own fields, so that journalctl MCPVISOR_OUTCOME=denied
 * or MCPVISOR_UID=0 finds it, and MCPVISOR_CLIENT names the connection; the default audit
 * ("denied") records the denial. */
Test(journal, denial_audited_with_its_fields, .init = fake_journald, .fini = stop, .timeout = 30) {
        char config[1024], pid_field[64];
        struct h_conn *c;
        json_object *r;

        snprintf(config, sizeof config,
                 "{\"mcpvisor\":{\"access\":{\"rules\":[{\"tools\":[\"jaudit__add\"],\"action\":\"deny\"}]}},"
                 "\"mcpServers\":{\"jaudit\":{\"command\":\"%s\"}}}",
                 h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(h_notify_wait(&D, "1/1 servers ready", H_TIMEOUT_MS));
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                  "\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}\n"
                  "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
                  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"jaudit__add\",\"arguments\":{}}}\n");
        json_object_put(h_recv(c, H_TIMEOUT_MS));
        r = h_recv(c, H_TIMEOUT_MS);
        cr_assert(r && strstr(h_json_text(r), "permission denied"), "the call: %s", h_json_text(r));
        json_object_put(r);
        snprintf(pid_field, sizeof pid_field, "MCPVISOR_PEER_PID=%d\n", (int)getpid());
        cr_assert(record_with((const char *[]){ "MCPVISOR_OUTCOME=denied\n", "MCPVISOR_UID=0\n", pid_field, "MCPVISOR_CLIENT=1\n",
                                                "MCPVISOR_TOOL=jaudit__add\n", "MCPVISOR_SERVER=jaudit\n",
                                                "MCPVISOR_DURATION_USEC=", "PRIORITY=5\n", NULL },
                              H_TIMEOUT_MS),
                  "no audit record with its fields");
        h_close(c);
}

/* The next message on c, receiving records meanwhile: the daemon's sd_journal_sendv() blocks,
 * as with journald, while the socket's queue is full (net.unix.max_dgram_qlen, 10 without
 * systemd's sysctl), and a call's audit record may come before its answer. */
static json_object *answer(struct h_conn *c) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;
        json_object *o;
        char *line;

        while (!(line = h_conn_take_line(c))) {
                struct pollfd p[2] = { { c->fd, POLLIN, 0 }, { journal_fd, POLLIN, 0 } };

                h_notify_drain(&D);
                cr_assert_lt(h_now_ms(), deadline, "no answer from the daemon within %d ms", H_TIMEOUT_MS);
                if (poll(p, 2, 20) <= 0)
                        continue;
                if (p[1].revents)
                        receive(h_now_ms());
                if (p[0].revents)
                        cr_assert(h_conn_fill_now(c), "the daemon closed the connection");
        }
        o = json_tokener_parse(line);
        cr_assert_not_null(o, "not JSON: %s", line);
        free(line);
        return o;
}

/* The daemon with one demo server jaudit (more members keys) and settings (JSON members of
 * "mcpvisor"), logging to the journal; a client connected and initialized. */
static struct h_conn *start_audited(const char *settings, const char *keys) {
        char config[2048];
        struct h_conn *c;

        snprintf(config, sizeof config, "{\"mcpvisor\":{%s},\"mcpServers\":{\"jaudit\":{\"command\":\"%s\"%s%s}}}",
                 settings, h_demo_server_path(), keys[0] ? "," : "", keys);
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(record_with((const char *[]){ "MESSAGE=[jaudit] starting -> ready", NULL }, H_TIMEOUT_MS),
                  "jaudit did not become ready");
        c = h_connect(D.sock, H_TIMEOUT_MS);
        h_send(c, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                  "\"capabilities\":{},\"clientInfo\":{\"name\":\"it\",\"version\":\"1\"}}}\n"
                  "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        json_object_put(answer(c));
        return c;
}

/* tools/call of tool with arguments (JSON text) as id; its answer. */
static json_object *call(struct h_conn *c, int id, const char *tool, const char *arguments) {
        h_sendf(c, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":%s}}\n",
                id, tool, arguments);
        return answer(c);
}

/* A call past requestTimeout is recorded as a timeout (audit "calls"), with the client, the
 * tool and how long it ran. */
Test(journal, timeout_audited, .init = fake_journald, .fini = stop, .timeout = 30) {
        struct h_conn *c = start_audited("\"audit\":\"calls\"", "\"requestTimeout\":0.3");
        json_object *r = call(c, 1, "jaudit__sleep", "{\"ms\":3000}");
        const struct record *rec;
        const char *usec;

        cr_assert(strstr(h_json_text(r), "requestTimeout"), "the call: %s", h_json_text(r));
        json_object_put(r);
        cr_assert(record_with((const char *[]){ "MCPVISOR_OUTCOME=timeout\n", "MCPVISOR_TOOL=jaudit__sleep\n",
                                                "MCPVISOR_SERVER=jaudit\n", "MCPVISOR_CLIENT=1\n", "MCPVISOR_UID=0\n",
                                                "PRIORITY=6\n", NULL },
                              H_TIMEOUT_MS),
                  "no audit record of the timeout");
        rec = &records[next_record - 1];
        usec = memmem(rec->data, rec->len, "MCPVISOR_DURATION_USEC=", strlen("MCPVISOR_DURATION_USEC="));
        cr_assert_not_null(usec);
        cr_assert_geq(strtoull(usec + strlen("MCPVISOR_DURATION_USEC="), NULL, 10), 300000ULL,
                      "the timeout came before requestTimeout: %.*s", (int)rec->len, rec->data);
        h_close(c);
}

#define ARG_SECRET "argument-secret-5b9e"
#define NAME_SECRET "NAME_SECRET_C41D"
#define RESULT_SECRET "result-secret-7f3a"

/* Arguments and results are never logged: with audit "calls", no record of a call that
 * succeeded, failed or was denied holds a text that only its arguments or its result held. */
Test(journal, audit_records_hold_no_arguments_or_results, .init = fake_journald, .fini = stop, .timeout = 30) {
        struct h_conn *c = start_audited("\"audit\":\"calls\",\"access\":{\"rules\":[{\"tools\":[\"jaudit__add\"],"
                                         "\"action\":\"deny\"}]}",
                                         "\"env\":{\"" NAME_SECRET "\":\"" RESULT_SECRET "\"}");
        json_object *r;

        r = call(c, 1, "jaudit__echo", "{\"text\":\"" ARG_SECRET "\"}");
        cr_assert(strstr(h_json_text(r), ARG_SECRET), "the echo: %s", h_json_text(r));
        json_object_put(r);
        r = call(c, 2, "jaudit__env", "{\"name\":\"" NAME_SECRET "\"}");
        cr_assert(strstr(h_json_text(r), RESULT_SECRET), "the env call: %s", h_json_text(r));
        json_object_put(r);
        r = call(c, 3, "jaudit__add", "{\"a\":\"" ARG_SECRET "\",\"b\":\"" NAME_SECRET "\"}");
        cr_assert(strstr(h_json_text(r), "permission denied"), "the denied call: %s", h_json_text(r));
        json_object_put(r);
        r = call(c, 4, "jaudit__fail", "{\"why\":\"" ARG_SECRET "\"}");
        cr_assert(h_error_code(r) != 0, "the failing call: %s", h_json_text(r));
        json_object_put(r);

        cr_assert(record_with((const char *[]){ "MCPVISOR_TOOL=jaudit__echo\n", "MCPVISOR_OUTCOME=ok\n", NULL }, H_TIMEOUT_MS));
        cr_assert(record_with((const char *[]){ "MCPVISOR_TOOL=jaudit__env\n", "MCPVISOR_OUTCOME=ok\n", NULL }, H_TIMEOUT_MS));
        cr_assert(record_with((const char *[]){ "MCPVISOR_TOOL=jaudit__add\n", "MCPVISOR_OUTCOME=denied\n", NULL },
                              H_TIMEOUT_MS));
        cr_assert(record_with((const char *[]){ "MCPVISOR_TOOL=jaudit__fail\n", "MCPVISOR_OUTCOME=error\n", NULL },
                              H_TIMEOUT_MS));
        h_close(c);
        /* the records of the client's going too */
        cr_assert(record_with((const char *[]){ "MCPVISOR_CLIENT=1\n", "client disconnected", NULL }, H_TIMEOUT_MS));
        for (const char *const *secret = (const char *[]){ ARG_SECRET, NAME_SECRET, RESULT_SECRET, NULL }; *secret; secret++) {
                const struct record *rec = any_record_with(*secret);

                cr_assert_null(rec, "a record holds %s: %.*s", *secret, rec ? (int)rec->len : 0, rec ? rec->data : "");
        }
}

/* ---- mcpvisorctl logs, against a real journal ---- */

static pid_t journald = -1;

static void mount_tmpfs(const char *dir) {
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                cr_skip_test("cannot create %s: %s", dir, strerror(errno));
        cr_assert_eq(mount("tmpfs", dir, "tmpfs", 0, "mode=0755"), 0, "%s: %s", dir, strerror(errno));
}

/* systemd-journald in a mount namespace of this test's own, where /run/systemd and
 * /run/log (and /var/log/journal, if the host has one) are empty tmpfs: the daemon's
 * records reach it, mcpvisorctl reads them back, and none lands in the host's journal. */
static void real_journald(void) {
        static const char *const programs[] = { "/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald" };
        const char *program = NULL;
        long long deadline;

        for (size_t i = 0; i < sizeof programs / sizeof programs[0] && !program; i++)
                if (access(programs[i], X_OK) == 0)
                        program = programs[i];
        if (!program)
                cr_skip_test("no systemd-journald here to keep a journal");
        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0)
                cr_skip_test("needs root and mount namespaces to run a journald of its own");
        cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        mount_tmpfs("/run/systemd");
        mount_tmpfs("/run/log");
        if (access("/var/log/journal", F_OK) == 0)
                mount_tmpfs("/var/log/journal");
        cr_assert_eq(mkdir("/run/systemd/journal", 0755), 0);
        journald = fork();
        cr_assert_geq(journald, 0);
        if (journald == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                dup2(null, 1);
                dup2(null, 2);
                execl(program, program, (char *)NULL);
                _exit(127);
        }
        deadline = h_now_ms() + H_TIMEOUT_MS;
        while (access("/run/systemd/journal/socket", F_OK) < 0) {
                cr_assert_lt(h_now_ms(), deadline, "systemd-journald did not make its socket");
                poll(NULL, 0, 20);
        }
}

static void stop_journald(void) {
        h_log_dump_if_verbose(&D);
        h_teardown_expect(h_cleanup(&D), "the daemon did not stop with exit status 0");
        if (journald > 0) {
                kill(journald, SIGTERM);
                waitpid(journald, NULL, 0);
        }
}

static unsigned lines_in(const char *text) {
        unsigned n = 0;

        for (; (text = strchr(text, '\n')); text++)
                n++;
        return n;
}

/* Runs mcpvisorctl logs NAME until its output holds needle, read from the journal (not the
 * lines the daemon keeps, which it shows while the journal has nothing yet); its output in
 * *p. */
static void logs_until(struct proc *p, const char *name, const char *needle) {
        long long deadline = h_now_ms() + H_TIMEOUT_MS;

        for (;;) {
                proc_start(p, &D, (const char *const[]){ "-C", D.control, "logs", name, NULL }, NULL);
                proc_close_stdin(p);
                cr_assert_eq(proc_wait(p, H_TIMEOUT_MS), 0, "logs exited with an error: %s", p->errbuf);
                if (strstr(p->outbuf, needle) && !strstr(p->errbuf, "keeps"))
                        return;
                cr_assert_lt(h_now_ms(), deadline, "logs never showed \"%s\": %s; stderr: %s", needle, p->outbuf, p->errbuf);
                proc_free(p);
                poll(NULL, 0, 100);
        }
}

/* Under systemd the daemon logs to the journal: logs NAME reads the server's records there
 * (its stderr and its log messages, which the daemon does not keep), and -f follows them. */
Test(journal, ctl_logs_reads_the_journal, .init = real_journald, .fini = stop_journald, .timeout = 60) {
        struct proc p = { 0 };
        struct h_client *x;
        json_object *r;
        char config[1024];
        char *line, *all;
        unsigned seen = 0;

        snprintf(config, sizeof config, "{\"mcpServers\":{\"jtest\":{\"command\":\"%s\",\"args\":[\"--stderr\",\"hello journal\"]}}}",
                 h_demo_server_path());
        h_start(&D, &(struct h_opts){ .config = config, .journal_stream = true });
        cr_assert(h_notify_wait(&D, "READY=1", H_TIMEOUT_MS));
        logs_until(&p, "jtest", " hello journal\n");
        proc_free(&p);

        proc_start(&p, &D, (const char *const[]){ "-C", D.control, "logs", "-f", "jtest", NULL }, NULL);
        x = h_client_open(&D, false, NULL);
        r = h_client_tool_call(x, "1", "jtest__log", "{\"text\":\"later on\"}");
        json_object_put(r);
        /* twice: its stderr line, and its log message, which only the journal has */
        while (seen < 2 && (line = proc_line(&p, H_TIMEOUT_MS))) {
                seen += strstr(line, " later on") != NULL;
                free(line);
        }
        cr_assert_eq(seen, 2, "logs -f showed: %s; stderr: %s", p.outbuf, p.errbuf);
        kill(p.pid, SIGTERM);
        proc_wait(&p, H_TIMEOUT_MS);
        proc_free(&p);
        /* -n 2: the last two of the records logs shows */
        logs_until(&p, "jtest", " later on\n");
        all = strdup(p.outbuf);
        proc_free(&p);
        proc_start(&p, &D, (const char *const[]){ "-C", D.control, "logs", "-n", "2", "jtest", NULL }, NULL);
        proc_close_stdin(&p);
        cr_assert_eq(proc_wait(&p, H_TIMEOUT_MS), 0, "%s", p.errbuf);
        cr_assert_eq(lines_in(p.outbuf), 2, "not two lines: %s", p.outbuf);
        cr_assert(strlen(all) >= strlen(p.outbuf) && strcmp(all + strlen(all) - strlen(p.outbuf), p.outbuf) == 0,
                  "-n 2 printed %s, not the last two of %s", p.outbuf, all);
        free(all);
        proc_free(&p);
        h_client_close(x);
}
