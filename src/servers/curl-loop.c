/* libcurl's multi socket interface on the daemon's loop; see curl-loop.h. */
#include "curl-loop.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "log.h"
#include "time-util.h"

struct curl_loop {
        struct event_base *base;
        const struct logger *log;
        CURLM *multi;
        struct event *timer;
};

/* What a transfer carries as CURLOPT_PRIVATE while it is in the loop. */
struct curl_loop_entry {
        curl_loop_done_fn done;
        void *userdata;
};

/* Every transfer that ended since curl last ran: reported after curl returned. */
static void report_done(struct curl_loop *l) {
        CURLMsg *msg;
        int left;

        while ((msg = curl_multi_info_read(l->multi, &left))) {
                struct curl_loop_entry *e = NULL;
                CURL *easy = msg->easy_handle;
                CURLcode result = msg->data.result;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&e);
                curl_multi_remove_handle(l->multi, easy);
                curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
                if (e) {
                        curl_loop_done_fn done = e->done;
                        void *userdata = e->userdata;

                        free(e);
                        done(easy, result, userdata);
                }
        }
}

static void run_curl(struct curl_loop *l, curl_socket_t fd, int flags) {
        int running;
        CURLMcode rc = curl_multi_socket_action(l->multi, fd, flags, &running);

        if (rc != CURLM_OK)
                log_emit(l->log, LOG_ERR, NULL, "curl_multi_socket_action: %s", curl_multi_strerror(rc));
        report_done(l);
}

static void on_socket_event(evutil_socket_t fd, short what, void *userdata) {
        struct curl_loop *l = userdata;
        int flags = (what & EV_READ ? CURL_CSELECT_IN : 0) | (what & EV_WRITE ? CURL_CSELECT_OUT : 0);

        run_curl(l, fd, flags);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        run_curl(userdata, CURL_SOCKET_TIMEOUT, 0);
}

/* CURLMOPT_SOCKETFUNCTION: watch s as curl asks. The event is the socket's curl-assigned
 * pointer; CURL_POLL_REMOVE frees it, and may come for a socket never watched. */
static int on_curl_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp) {
        struct curl_loop *l = userp;
        struct event *ev = socketp;
        short kind;

        if (what == CURL_POLL_REMOVE) {
                if (ev) {
                        event_free(ev);
                        curl_multi_assign(l->multi, s, NULL);
                }
                return 0;
        }
        kind = EV_PERSIST | (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0);
        if (ev) {
                event_del(ev);
                event_assign(ev, l->base, s, kind, on_socket_event, l);
        } else {
                ev = event_new(l->base, s, kind, on_socket_event, l);
                if (!ev)
                        return -1; /* curl fails the transfer */
                curl_multi_assign(l->multi, s, ev);
        }
        event_add(ev, NULL);
        return 0;
}

/* CURLMOPT_TIMERFUNCTION: curl's next deadline; -1 none. Even 0 waits for the loop: curl
 * must not be called from here. */
static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp) {
        struct curl_loop *l = userp;
        struct timeval tv;

        if (timeout_ms < 0) {
                evtimer_del(l->timer);
                return 0;
        }
        tv = timeval_from_usec((uint64_t)timeout_ms * 1000);
        evtimer_add(l->timer, &tv);
        return 0;
}

curl_socket_t curl_loop_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
        return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

int curl_loop_new(struct event_base *base, const struct logger *log, struct curl_loop **ret, const char **error) {
        struct curl_loop *l;
        int r = curl_library_load(error);

        if (r < 0)
                return r;
        /* Once per process; curl keeps what it set up until exit. */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                *error = "curl_global_init failed";
                return -ENOMEM;
        }
        l = calloc(1, sizeof *l);
        if (!l) {
                *error = "out of memory";
                return -ENOMEM;
        }
        l->base = base;
        l->log = log;
        l->multi = curl_multi_init();
        l->timer = evtimer_new(base, on_timer, l);
        if (!l->multi || !l->timer) {
                curl_loop_free(l);
                *error = "out of memory";
                return -ENOMEM;
        }
        curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
        curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
        curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
        curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
        /* An HTTP/2 server takes a server's calls as streams of one connection. */
        curl_multi_setopt(l->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
        *ret = l;
        return 0;
}

void curl_loop_free(struct curl_loop *l) {
        if (!l)
                return;
        if (l->multi)
                curl_multi_cleanup(l->multi); /* its sockets' events come back as CURL_POLL_REMOVE */
        if (l->timer)
                event_free(l->timer);
        free(l);
}

int curl_loop_add(struct curl_loop *l, CURL *easy, curl_loop_done_fn done, void *userdata) {
        struct curl_loop_entry *e = malloc(sizeof *e);

        if (!e)
                return -ENOMEM;
        *e = (struct curl_loop_entry){ .done = done, .userdata = userdata };
        curl_easy_setopt(easy, CURLOPT_PRIVATE, e);
        if (curl_multi_add_handle(l->multi, easy) != CURLM_OK) {
                curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
                free(e);
                return -ENOMEM;
        }
        return 0;
}

void curl_loop_remove(struct curl_loop *l, CURL *easy) {
        struct curl_loop_entry *e = NULL;

        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&e);
        if (!e)
                return;
        curl_multi_remove_handle(l->multi, easy);
        curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        free(e);
}
