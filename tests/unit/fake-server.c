/* A server played by the test; see fake-server.h. */
#include "fake-server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server-transport.h"
#include "unit-helpers.h"

static int srv_in = -1;  /* the server's stdin: the test reads what the daemon sent */
static int srv_out = -1; /* the server's stdout: the test writes */
static struct event *rx_event;
static struct evbuffer *rx;
static bool rx_eof;

static void on_rx(evutil_socket_t fd, short what, void *userdata) {
        int k = evbuffer_read(rx, fd, 65536);

        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                rx_eof = true;
                event_del(rx_event);
        }
}

/* Plays the server on the ends in (its stdin, non-blocking, so that on_rx never blocks
 * the loop) and out (its stdout), reading in on base. */
static void server_take(struct event_base *base, int in, int out) {
        /* Writing to a pipe nobody reads must fail with EPIPE, not end the test. */
        signal(SIGPIPE, SIG_IGN);
        srv_in = in;
        srv_out = out;
        rx_eof = false;
        rx = evbuffer_new();
        cr_assert_not_null(rx);
        rx_event = event_new(base, srv_in, EV_READ | EV_PERSIST, on_rx, NULL);
        cr_assert_not_null(rx_event);
        cr_assert_eq(event_add(rx_event, NULL), 0);
}

/* Closes what server_take() took. */
static void server_release(void) {
        if (rx_event)
                event_free(rx_event);
        rx_event = NULL;
        if (rx)
                evbuffer_free(rx);
        rx = NULL;
        if (srv_in >= 0)
                close(srv_in);
        if (srv_out >= 0)
                close(srv_out);
        srv_in = srv_out = -1;
}

/* Opens the pipes and reads the server's stdin on base. The daemon's ends go to *to (the
 * server's stdin) and *from (its stdout). */
static void server_start(struct event_base *base, int *to, int *from) {
        int in[2], out[2];

        /* The daemon's ends non-blocking, as instance.c makes them. */
        open_pipe(in, PIPE_READ_NONBLOCK | PIPE_WRITE_NONBLOCK);
        open_pipe(out, PIPE_READ_NONBLOCK);
        server_take(base, in[0], out[1]);
        *to = in[1];
        *from = out[0];
}

void server_adopt(struct event_base *base, int in, int out) {
        server_release();
        cr_assert_eq(fcntl(in, F_SETFL, O_NONBLOCK), 0);
        server_take(base, in, out);
}

void server_pauses_reading(bool paused) {
        if (rx_eof)
                return;
        cr_assert_eq(paused ? event_del(rx_event) : event_add(rx_event, NULL), 0);
}

struct child *server_connect(const struct logger *lg, struct jsonrpc_parser *parser, size_t max_line,
                             const struct child_ops *ops, void *userdata) {
        struct event_base *base = loop_start();
        struct server_transport *t;
        struct child *ch;
        int to, from;

        server_start(base, &to, &from);
        t = transport_pipe_new(base, to, from, max_line, "srv", lg);
        cr_assert_not_null(t);
        ch = child_new(base, t, max_line, "srv", lg, parser, ops, userdata);
        cr_assert_not_null(ch);
        return ch;
}

void server_stop(void) {
        server_release();
        loop_stop();
}

void server_says(const char *s) {
        write_all(srv_out, s, strlen(s));
}

void server_answers(int64_t id, const char *result_json) {
        char *line;

        cr_assert(asprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}\n", (long long)id, result_json) > 0);
        server_says(line);
        free(line);
}

void server_closes_stdout(void) {
        close(srv_out);
        srv_out = -1;
}

void server_stops_reading(void) {
        close(srv_in);
        event_del(rx_event);
        srv_in = -1;
}

struct evbuffer *server_received(void) {
        return rx;
}

bool server_saw_eof(void) {
        return rx_eof;
}

bool server_has_line(void) {
        return evbuffer_search(rx, "\n", 1, NULL).pos >= 0;
}

json_object *server_reads(void) {
        WAIT_UNTIL(server_has_line());
        size_t n;
        char *line = evbuffer_readln(rx, &n, EVBUFFER_EOL_LF);
        json_object *m = json_tokener_parse(line);

        cr_assert_not_null(m, "not JSON: %s", line);
        free(line);
        return m;
}

const char *str_field(json_object *m, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(m, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}
