/* Who is at the other end of a connection: the peer's credentials as the kernel took them at
 * connect() (SO_PEERCRED, SO_PEERGROUPS), and, best effort, its command name and user name
 * for people to read. Resolved once, when the connection is accepted; every later decision
 * uses it, never the socket again. */
#pragma once

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* TASK_COMM_LEN: the kernel's command names are at most 15 bytes. */
#define PRINCIPAL_COMM_MAX 16

struct principal {
        uid_t uid;                     /* (uid_t)-1 when SO_PEERCRED failed */
        gid_t gid;
        pid_t pid;                     /* 0 when unknown */
        gid_t *groups;                 /* supplementary groups; owned */
        size_t n_groups;
        char comm[PRINCIPAL_COMM_MAX]; /* /proc/PID/comm, "" when unknown; may hold any byte */
        char *user;                    /* the uid's user name, NULL when it has none */
};

/* Fills ret for the peer of fd, whose credentials the listener read (peer). The groups
 * come from SO_PEERGROUPS, or, where the kernel refuses it, from the uid's user in the
 * group database. Returns 0, or -ENOMEM (ret is then empty, safe to pass to
 * principal_done()). Looks the user up in NSS, so it may block as long as NSS does. */
int principal_resolve(int fd, const struct ucred *peer, struct principal *ret);
void principal_done(struct principal *p);

/* The command name in the text of /proc/PID/comm (len bytes, its newline dropped),
 * into ret (size bytes, at least 1); "" when there is none. */
void principal_parse_comm(const char *text, size_t len, char *ret, size_t size);
/* The groups of SO_PEERGROUPS (len bytes of gids) as a fresh array, in ret and *ret_n.
 * -EINVAL when len is not a whole number of gids. */
int principal_groups_copy(const void *buf, size_t len, gid_t **ret, size_t *ret_n);
