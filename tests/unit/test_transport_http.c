/* Unit tests for transport-http.c: the life of the HTTP transport to a remote server,
 * every (state, event) cell of it.
 *
 * The events come through the transport's own operations (send, close_input, abort,
 * stop_receiving) and from curl's side, faked: this file defines every function of
 * curl-loop.h, so the linker never takes curl-loop.o out of libmcpvisor_core.a (as
 * unit.run_systemd replaces bus.c), and a transfer "ends" when the test says so, with the
 * status, headers and body it gives. libcurl itself is the real one (curl-library.c loads
 * it: URLs are parsed as the daemon parses them); only curl_easy_setopt() and
 * curl_easy_getinfo() are wrapped at link time (-Wl,--wrap), to learn a transfer's
 * callbacks and to answer its status and type. tests/integration/test_remote.c drives the
 * same transport over real HTTP. */
#define CURL_DISABLE_TYPECHECK 1
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "curl-loop.h"
#include "log.h"
#include "macro.h"
#include "remote-config.h"
#include "server-transport.h"
#include "transport-http.h"
#include "unit-helpers.h"

/* ---- the test's curl loop, and what the transport set on its handles ---- */

enum fake_kind { FAKE_POST, FAKE_GET, FAKE_DELETE, FAKE_KINDS };

struct fake {
        CURL *easy;
        enum fake_kind kind;
        curl_loop_done_fn done;
        void *userdata;
        curl_write_callback write, header;
        void *write_data, *header_data;
        bool live;                  /* in the loop: neither ended nor removed */
        long status;                /* while it ends */
        const char *type;
};

/* Options set on a handle, until it is added to the loop. */
struct options {
        CURL *easy;
        curl_write_callback write, header;
        void *write_data, *header_data;
        bool post, delete;
};

#define MAX_FAKES 64

static struct {
        struct fake fakes[MAX_FAKES]; /* never reused */
        unsigned n;
        unsigned started[FAKE_KINDS];
        struct options options[16];
        const struct fake *ending;    /* whose status and type getinfo answers */
} F;

static struct options *options_of(CURL *e) {
        struct options *free_slot = NULL;

        for (size_t i = 0; i < ARRAY_SIZE(F.options); i++) {
                if (F.options[i].easy == e)
                        return &F.options[i];
                if (!F.options[i].easy && !free_slot)
                        free_slot = &F.options[i];
        }
        cr_assert_not_null(free_slot, "too many handles being set up");
        *free_slot = (struct options){ .easy = e };
        return free_slot;
}

CURLcode __real_curl_easy_setopt(CURL *e, CURLoption option, ...);
CURLcode __real_curl_easy_getinfo(CURL *e, CURLINFO info, ...);

CURLcode __wrap_curl_easy_setopt(CURL *e, CURLoption option, ...) {
        struct options *o = options_of(e);
        va_list ap;
        long l = 0;
        curl_off_t off = 0;
        void *p = NULL;

        va_start(ap, option);
        if (option < CURLOPTTYPE_OBJECTPOINT)
                l = va_arg(ap, long);
        else if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB)
                off = va_arg(ap, curl_off_t);
        else
                p = va_arg(ap, void *);
        va_end(ap);
        switch (option) {
        case CURLOPT_WRITEFUNCTION:
                o->write = (curl_write_callback)p;
                break;
        case CURLOPT_WRITEDATA:
                o->write_data = p;
                break;
        case CURLOPT_HEADERFUNCTION:
                o->header = (curl_write_callback)p;
                break;
        case CURLOPT_HEADERDATA:
                o->header_data = p;
                break;
        case CURLOPT_POSTFIELDS:
                o->post = true;
                break;
        case CURLOPT_CUSTOMREQUEST:
                o->delete = p && strcmp(p, "DELETE") == 0;
                break;
        default:
                break;
        }
        if (option < CURLOPTTYPE_OBJECTPOINT)
                return __real_curl_easy_setopt(e, option, l);
        if (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB)
                return __real_curl_easy_setopt(e, option, off);
        return __real_curl_easy_setopt(e, option, p);
}

CURLcode __wrap_curl_easy_getinfo(CURL *e, CURLINFO info, ...) {
        va_list ap;
        void *where;

        va_start(ap, info);
        where = va_arg(ap, void *);
        va_end(ap);
        cr_assert(F.ending && F.ending->easy == e, "getinfo outside a transfer's end");
        if (info == CURLINFO_RESPONSE_CODE)
                *(long *)where = F.ending->status;
        else if (info == CURLINFO_CONTENT_TYPE)
                *(const char **)where = F.ending->type;
        else
                return __real_curl_easy_getinfo(e, info, where);
        return CURLE_OK;
}

struct curl_loop {
        int unused;
};

static struct curl_loop the_loop;

int curl_loop_new(struct event_base *base, const struct logger *log, struct curl_loop **ret, const char **error) {
        *ret = &the_loop;
        return 0;
}

void curl_loop_free(struct curl_loop *l) {
}

int curl_loop_add(struct curl_loop *l, CURL *easy, curl_loop_done_fn done, void *userdata) {
        struct options *o = options_of(easy);
        struct fake *f;

        cr_assert_lt(F.n, MAX_FAKES);
        f = &F.fakes[F.n++];
        *f = (struct fake){ .easy = easy, .done = done, .userdata = userdata, .live = true, .write = o->write,
                            .write_data = o->write_data, .header = o->header, .header_data = o->header_data,
                            .kind = o->delete ? FAKE_DELETE : o->post ? FAKE_POST : FAKE_GET };
        *o = (struct options){ 0 };
        F.started[f->kind]++;
        return 0;
}

void curl_loop_remove(struct curl_loop *l, CURL *easy) {
        for (unsigned i = 0; i < F.n; i++)
                if (F.fakes[i].easy == easy && F.fakes[i].live)
                        F.fakes[i].live = false;
}

curl_socket_t curl_loop_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
        cr_assert_fail("no socket is opened here");
        return CURL_SOCKET_BAD;
}

/* The live transfer of kind (the last one started), or NULL. */
static struct fake *live(enum fake_kind kind) {
        for (unsigned i = F.n; i > 0; i--)
                if (F.fakes[i - 1].kind == kind && F.fakes[i - 1].live)
                        return &F.fakes[i - 1];
        return NULL;
}

static unsigned live_count(void) {
        unsigned k = 0;

        for (unsigned i = 0; i < F.n; i++)
                k += F.fakes[i].live;
        return k;
}

/* f ends as curl would end it: its headers, its body, then its end, outside curl. */
static void end_transfer(struct fake *f, long status, const char *type, const char *header, const char *body,
                         CURLcode result) {
        cr_assert_not_null(f, "no such transfer");
        cr_assert(f->live);
        f->status = status;
        f->type = type;
        F.ending = f;
        if (header)
                f->header((char *)header, 1, strlen(header), f->header_data);
        if (body)
                f->write((char *)body, 1, strlen(body), f->write_data);
        f->live = false;
        f->done(f->easy, result, f->userdata);
        F.ending = NULL;
}

/* ---- the transport, and what it tells ---- */

static struct logger log_;
static struct event_base *base;
static struct server_transport *T;
static struct remote_config RC = { .url = (char *)"http://127.0.0.1:9/mcp", .type = REMOTE_STREAMABLE_HTTP,
                                   .connect_timeout = 10, .max_connections = 8 };

static struct {
        unsigned lines, broken, unanswered, finished;
        struct http_end end;
} E;

static void on_line(const char *line, size_t len, const struct loan_offer *offer, void *userdata) {
        E.lines++;
}

static void on_oversize(const char *head, size_t len, void *userdata) {
}

static void on_broken(const char *why, void *userdata) {
        E.broken++;
}

static void on_unanswered(int64_t id, const char *what, void *userdata) {
        E.unanswered++;
}

static const struct server_transport_events events = {
        .line = on_line, .oversize = on_oversize, .broken = on_broken, .unanswered = on_unanswered,
};

static void on_finished(const struct http_end *end, void *userdata) {
        E.finished++;
        E.end = *end;
}

static void setup(void) {
        const char *error = NULL;

        log_capture_start();
        logger_init(&log_, LOG_DEBUG);
        base = loop_start();
        cr_assert_eq(curl_library_load(&error), 0, "%s", error ? error : "");
        curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void teardown(void) {
        if (T)
                T->ops->free(T);
        T = NULL;
        loop_stop();
        log_capture_stop();
}

TestSuite(transport_http, .init = setup, .fini = teardown, .timeout = 30);

static int send_text(const char *text) {
        struct iovec iov = { (void *)text, strlen(text) };

        return T->ops->send(T, &iov, 1);
}

static const char *state(void) {
        return transport_http_state(T);
}

#define INITIALIZE "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n"
#define INITIALIZED "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
#define REQUEST(id) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/list\"}\n"

/* A session initialized (its id s1), its GET stream open, request 2 under way. */
static void open_session(void) {
        T = transport_http_new(&(struct http_transport_params){
                .base = base, .loop = &the_loop, .log = &log_, .name = "s", .rc = &RC, .max_message = 65536,
                .finished = on_finished });
        cr_assert_not_null(T);
        server_transport_attach(T, &events, NULL);
        cr_assert_eq(send_text(INITIALIZE), 0);
        end_transfer(live(FAKE_POST), 200, "application/json", "Mcp-Session-Id: s1\r\n",
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"}}", CURLE_OK);
        WAIT_UNTIL(E.lines == 1);
        cr_assert_null(live(FAKE_GET), "no GET stream before initialization");
        cr_assert_eq(send_text(INITIALIZED), 0);
        end_transfer(live(FAKE_POST), 202, NULL, NULL, NULL, CURLE_OK);
        cr_assert_not_null(live(FAKE_GET), "the GET stream opened once initialized");
        cr_assert_eq(send_text(REQUEST(2)), 0);
        cr_assert_not_null(live(FAKE_POST));
        cr_assert_str_eq(state(), "open");
}

/* ---- the cells ---- */

enum cell_state { OPEN, BROKEN, CLOSING, FINISHED, STATES };

enum cell_event {
        EV_SEND,            /* ops->send of request 3 */
        EV_ANSWER,          /* request 2's POST: 200, its response as JSON */
        EV_REFUSED,         /* request 2's POST: 409, the session stands */
        EV_SERVER_ERROR,    /* request 2's POST: 500 */
        EV_CREDENTIAL,      /* request 2's POST: 401 */
        EV_CURL_ERROR,      /* request 2's POST: no connection */
        EV_GET_DROPPED,     /* the GET stream: the connection dropped */
        EV_DELETE_DONE,     /* the session's DELETE: 200 */
        EV_REOPEN,          /* the reopen timer's delay passes */
        EV_CLOSE,           /* ops->close_input */
        EV_ABORT,           /* transport_http_abort() */
        EV_STOP_RECEIVING,  /* ops->stop_receiving */
        EVENTS,
};

static const char *const state_text[STATES] = { "open", "broken", "closing", "finished" };

static const char *const event_text[EVENTS] = {
        [EV_SEND] = "send",           [EV_ANSWER] = "answer",         [EV_REFUSED] = "refused",
        [EV_SERVER_ERROR] = "HTTP 500", [EV_CREDENTIAL] = "HTTP 401",   [EV_CURL_ERROR] = "no connection",
        [EV_GET_DROPPED] = "GET dropped", [EV_DELETE_DONE] = "DELETE done", [EV_REOPEN] = "reopen delay",
        [EV_CLOSE] = "close input",   [EV_ABORT] = "abort",           [EV_STOP_RECEIVING] = "stop receiving",
};

/* Puts the transport in st the way the daemon gets there. Out of open, its GET stream
 * dropped first, so that its reopen timer was due when it left. */
static void reach(enum cell_state st) {
        open_session();
        if (st != OPEN)
                end_transfer(live(FAKE_GET), 0, NULL, NULL, NULL, CURLE_RECV_ERROR);
        if (st == BROKEN)
                end_transfer(live(FAKE_POST), 500, "text/plain", NULL, "down", CURLE_OK);
        if (st == CLOSING || st == FINISHED)
                T->ops->close_input(T);
        if (st == FINISHED) {
                end_transfer(live(FAKE_DELETE), 200, NULL, NULL, NULL, CURLE_OK);
                WAIT_UNTIL(E.finished == 1);
        }
        cr_assert_str_eq(state(), state_text[st]);
}

/* What an event started, and what the transport told. */
enum {
        START_POST = 1 << 0,
        START_GET = 1 << 1,
        START_DELETE = 1 << 2,
        TOLD_BROKEN = 1 << 3,
        TOLD_LINE = 1 << 4,
        TOLD_UNANSWERED = 1 << 5,
};

struct cell {
        enum cell_state from;
        enum cell_event ev;
        enum cell_state to;
        unsigned does;
};

/* The cells where an event can arrive: a transfer's end only while the transfer is. */
static struct cell cells[] = {
        { OPEN, EV_SEND, OPEN, START_POST },
        { OPEN, EV_ANSWER, OPEN, TOLD_LINE | TOLD_UNANSWERED }, /* the connection knows it was answered */
        { OPEN, EV_REFUSED, OPEN, TOLD_UNANSWERED },
        { OPEN, EV_SERVER_ERROR, BROKEN, TOLD_BROKEN },
        { OPEN, EV_CREDENTIAL, BROKEN, TOLD_BROKEN },
        { OPEN, EV_CURL_ERROR, BROKEN, TOLD_BROKEN },
        { OPEN, EV_GET_DROPPED, OPEN, 0 },               /* not again at once */
        { OPEN, EV_REOPEN, OPEN, START_GET },            /* after it dropped */
        { OPEN, EV_CLOSE, CLOSING, START_DELETE },
        { OPEN, EV_ABORT, FINISHED, 0 },
        { OPEN, EV_STOP_RECEIVING, OPEN, 0 },

        /* nothing of curl's left: sends refused, the close finishes at once, without DELETE */
        { BROKEN, EV_SEND, BROKEN, 0 },
        { BROKEN, EV_REOPEN, BROKEN, 0 },
        { BROKEN, EV_CLOSE, FINISHED, 0 },
        { BROKEN, EV_ABORT, FINISHED, 0 },
        { BROKEN, EV_STOP_RECEIVING, BROKEN, 0 },

        { CLOSING, EV_SEND, CLOSING, 0 },
        { CLOSING, EV_DELETE_DONE, FINISHED, 0 },
        { CLOSING, EV_REOPEN, CLOSING, 0 },
        { CLOSING, EV_CLOSE, CLOSING, 0 },
        { CLOSING, EV_ABORT, FINISHED, 0 },
        { CLOSING, EV_STOP_RECEIVING, CLOSING, 0 },

        { FINISHED, EV_SEND, FINISHED, 0 },
        { FINISHED, EV_REOPEN, FINISHED, 0 },
        { FINISHED, EV_CLOSE, FINISHED, 0 },
        { FINISHED, EV_ABORT, FINISHED, 0 },
        { FINISHED, EV_STOP_RECEIVING, FINISHED, 0 },
};

/* The end of a transfer the transport does not have (curl's loop with a bug would report
 * one): it logs the bug and stops the daemon. */
#define NEVER(state, event) { .from = (state), .ev = (event) }
#define NO_TRANSFER(state)                                                                               \
        NEVER(state, EV_ANSWER), NEVER(state, EV_REFUSED), NEVER(state, EV_SERVER_ERROR),                   \
                NEVER(state, EV_CREDENTIAL), NEVER(state, EV_CURL_ERROR), NEVER(state, EV_GET_DROPPED)
static struct cell impossible[] = {
        NEVER(OPEN, EV_DELETE_DONE),
        NO_TRANSFER(BROKEN),   NEVER(BROKEN, EV_DELETE_DONE),
        NO_TRANSFER(CLOSING),
        NO_TRANSFER(FINISHED), NEVER(FINISHED, EV_DELETE_DONE),
};

static unsigned cell_count(const struct cell *list, size_t n, enum cell_state st, enum cell_event ev) {
        unsigned k = 0;

        for (size_t i = 0; i < n; i++)
                k += list[i].from == st && list[i].ev == ev;
        return k;
}

Test(transport_http, every_cell_tested_once) {
        for (int st = 0; st < STATES; st++)
                for (int ev = 0; ev < EVENTS; ev++)
                        cr_expect_eq(cell_count(cells, ARRAY_SIZE(cells), st, ev) +
                                             cell_count(impossible, ARRAY_SIZE(impossible), st, ev),
                                     1, "%s x %s", state_text[st], event_text[ev]);
}

#define REOPEN_WAIT_USEC (1200 * UINT64_C(1000)) /* past transport-http.c's HTTP_REOPEN_USEC */

static void feed(enum cell_event ev, enum cell_state from) {
        int r;

        switch (ev) {
        case EV_SEND:
                r = send_text(REQUEST(3));
                cr_assert_eq(r, from == OPEN ? 0 : -EPIPE, "send: %d", r);
                break;
        case EV_ANSWER:
                end_transfer(live(FAKE_POST), 200, "application/json", NULL, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}",
                             CURLE_OK);
                break;
        case EV_REFUSED:
                end_transfer(live(FAKE_POST), 409, "text/plain", NULL, "conflict", CURLE_OK);
                break;
        case EV_SERVER_ERROR:
                end_transfer(live(FAKE_POST), 500, "text/plain", NULL, "down", CURLE_OK);
                break;
        case EV_CREDENTIAL:
                end_transfer(live(FAKE_POST), 401, NULL, NULL, NULL, CURLE_OK);
                break;
        case EV_CURL_ERROR:
                end_transfer(live(FAKE_POST), 0, NULL, NULL, NULL, CURLE_COULDNT_CONNECT);
                break;
        case EV_GET_DROPPED:
                end_transfer(live(FAKE_GET), 0, NULL, NULL, NULL, CURLE_RECV_ERROR);
                break;
        case EV_DELETE_DONE:
                end_transfer(live(FAKE_DELETE), 200, NULL, NULL, NULL, CURLE_OK);
                break;
        case EV_REOPEN:
                if (from == OPEN) {
                        end_transfer(live(FAKE_GET), 0, NULL, NULL, NULL, CURLE_RECV_ERROR);
                        WAIT_UNTIL(live(FAKE_GET) != NULL);
                } else {
                        run_for(REOPEN_WAIT_USEC);
                }
                break;
        case EV_CLOSE:
                T->ops->close_input(T);
                break;
        case EV_ABORT:
                transport_http_abort(T);
                break;
        case EV_STOP_RECEIVING:
                T->ops->stop_receiving(T, false);
                break;
        default:
                cr_assert_fail("no event %d", ev);
        }
}

ParameterizedTestParameters(transport_http, cell) {
        return cr_make_param_array(struct cell, cells, ARRAY_SIZE(cells));
}

ParameterizedTest(struct cell *c, transport_http, cell) {
        const char *from = state_text[c->from], *ev = event_text[c->ev];
        unsigned started[FAKE_KINDS], broken, lines, unanswered, finished;

        reach(c->from);
        memcpy(started, F.started, sizeof started);
        broken = E.broken;
        lines = E.lines;
        unanswered = E.unanswered;
        finished = E.finished;
        feed(c->ev, c->from);
        for (int k = 0; k < 3; k++)
                loop_once(); /* what is handed up, and the run's end, come on later turns */
        cr_assert_str_eq(state(), state_text[c->to], "%s x %s: %s, not %s", from, ev, state(), state_text[c->to]);
        cr_assert_eq(F.started[FAKE_POST] - started[FAKE_POST], !!(c->does & START_POST), "%s x %s: POSTs", from, ev);
        cr_assert_eq(F.started[FAKE_GET] - started[FAKE_GET], !!(c->does & START_GET), "%s x %s: GETs", from, ev);
        cr_assert_eq(F.started[FAKE_DELETE] - started[FAKE_DELETE], !!(c->does & START_DELETE), "%s x %s: DELETEs",
                     from, ev);
        cr_assert_eq(E.broken - broken, !!(c->does & TOLD_BROKEN), "%s x %s: told broken", from, ev);
        cr_assert_eq(E.lines - lines, !!(c->does & TOLD_LINE), "%s x %s: lines", from, ev);
        cr_assert_eq(E.unanswered - unanswered, !!(c->does & TOLD_UNANSWERED), "%s x %s: unanswered", from, ev);
        cr_assert_eq(E.finished, c->to == FINISHED, "%s x %s: its end told once", from, ev);
        if (c->to == FINISHED && finished == 0)
                cr_assert_eq(E.end.failure, c->from == BROKEN, "%s x %s: a failure", from, ev);
        /* what the state owns, and nothing else */
        if (c->to == BROKEN || c->to == FINISHED)
                cr_assert_eq(live_count(), 0, "%s x %s: a transfer left", from, ev);
        if (c->to == CLOSING)
                cr_assert(live_count() == 1 && live(FAKE_DELETE), "%s x %s: more than the DELETE", from, ev);
}

ParameterizedTestParameters(transport_http, impossible_cell_stops_the_daemon) {
        return cr_make_param_array(struct cell, impossible, ARRAY_SIZE(impossible));
}

/* How the test ends when the daemon stopped itself for a bug, as it says it does. */
#define EXIT_BUG_SAID 42

/* The abort() of transport-http.c's impossible(), after it logged the bug (any other
 * abort fails the test); the log capture is given back, there being no fini. */
static void on_abort(int sig) {
        bool said = strstr(logged(), "bug: its HTTP transport: the end of a transfer it does not have") != NULL;

        log_capture_stop();
        _exit(said ? EXIT_BUG_SAID : EXIT_FAILURE);
}

/* The end of a transfer reported on a handle the transport has no transfer of (it was
 * removed, or never was), as a curl loop with a bug would. */
ParameterizedTest(struct cell *c, transport_http, impossible_cell_stops_the_daemon, .exit_code = EXIT_BUG_SAID) {
        static struct fake stray;

        reach(c->from);
        cr_assert_lt(F.n, MAX_FAKES);
        stray = F.fakes[0]; /* its callback and transport; its handle long removed */
        stray.easy = (CURL *)&stray;
        stray.live = true;
        signal(SIGABRT, on_abort);
        end_transfer(&stray, 200, NULL, NULL, NULL, CURLE_OK);
        cr_assert_fail("%s x %s was taken", state_text[c->from], event_text[c->ev]);
}

/* ---- ways through ---- */

/* A GET stream that the server ends at once is not asked again at once, but after the
 * reopen delay, with the last event id. */
Test(transport_http, dropped_get_waits_before_reopening) {
        reach(OPEN);
        end_transfer(live(FAKE_GET), 200, "text/event-stream", NULL, "id: 7\ndata: {}\n\n", CURLE_OK);
        cr_assert_null(live(FAKE_GET), "reopened at once");
        run_for(300 * UINT64_C(1000));
        cr_assert_null(live(FAKE_GET), "reopened before its delay");
        WAIT_UNTIL(live(FAKE_GET) != NULL);
}

/* A 405 to the GET: never asked again. */
Test(transport_http, get_refused_is_not_reopened) {
        reach(OPEN);
        end_transfer(live(FAKE_GET), 405, NULL, NULL, NULL, CURLE_OK);
        run_for(REOPEN_WAIT_USEC);
        cr_assert_null(live(FAKE_GET));
        end_transfer(live(FAKE_POST), 200, "application/json", NULL, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}",
                     CURLE_OK);
        cr_assert_null(live(FAKE_GET), "asked again at a transfer's end");
}

/* A refused credential: the end says not to retry; the states as the log says them. */
Test(transport_http, refused_credential_ends_without_retry) {
        reach(OPEN);
        feed(EV_CREDENTIAL, OPEN);
        T->ops->close_input(T);
        WAIT_UNTIL(E.finished == 1);
        cr_assert(E.end.failure && E.end.no_retry);
        cr_assert(strstr(logged(), "its HTTP transport: open -> broken"), "%s", logged());
        cr_assert(strstr(logged(), "its HTTP transport: closing -> finished"), "%s", logged());
}
