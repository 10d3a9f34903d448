/* Reload: the configuration read again (off the loop, config-reader.h) and applied while
 * running. Asked by SIGHUP or the control socket's "reload"; a request while a read runs is
 * coalesced with the others that come meanwhile into one more read, started once the
 * running one is applied (the file may have changed after the thread read it). */
#pragma once

#include <json-c/json.h>
#include <stdint.h>
#include <sys/queue.h>

#include "config-reader.h"

struct daemon;
struct client;

enum reload_state {
        RELOAD_IDLE,
        RELOAD_READING,        /* a read runs */
        RELOAD_READING_AGAIN,  /* a read runs, and one more was asked for since it started */
};

/* A control client waiting for the answer of a read. */
struct reload_waiter {
        TAILQ_ENTRY(reload_waiter) entry;
        struct client *client;   /* held (client_hold_request); forgotten when it goes */
        json_object *id;         /* referenced */
        uint64_t read;           /* the number of the read that answers it */
};

TAILQ_HEAD(reload_waiter_list, reload_waiter);

struct reload {
        enum reload_state state; /* moved by set_state() in reload.c alone */
        struct config_reader reader;
        uint64_t reads;          /* reads started: the number of the last one */
        struct reload_waiter_list waiters;
};

int reload_init(struct daemon *d);
/* Asks for a reload, by SIGHUP (asker NULL) or by a control client (asker, and its request's
 * id), which is answered once the read that follows the request has been applied, or at
 * once when the daemon is stopping (control_reload_answer()). */
void daemon_reload(struct daemon *d, const char *why, struct client *asker, json_object *id);
/* The daemon stops: waiting control clients are told so; a read under way is discarded. */
void reload_stopping(struct daemon *d);
void reload_client_gone(struct daemon *d, struct client *c);
/* Joins a read under way and discards it; frees what is left. */
void reload_done(struct daemon *d);
