/* The key of the tokens at rest: a credential, else one sealed by systemd-creds, each a
 * source behind the same table; see oauth-key.h. */
#include "oauth-key.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credential.h"
#include "macro.h"
#include "process.h"
#include "text.h"

extern char **environ;

/* What systemd-creds prints is a 64-digit hex key and its newline; more is not ours. */
#define CREDS_OUTPUT_MAX 256

/* The child's step: a new key sealed first when there is none, then the key opened. */
enum creds_step { CREDS_ENCRYPT, CREDS_DECRYPT };

struct oauth_key_load {
        struct event_base *base;
        char *prog;                       /* systemd-creds */
        char *path;                       /* STATE/oauth-key.cred */
        enum creds_step step;
        struct process child;             /* pid 0: none running */
        int out_fd;                       /* its stdout; -1 once at its end */
        struct event *out_event;
        char out[CREDS_OUTPUT_MAX];
        size_t len;
        oauth_key_done_fn done;
        void *userdata;
};

/* A source of the key. begin: 0 with the key; 1 under way (done follows); -ENOENT when
 * this source has none (the next is asked); another negative errno with *error. */
struct key_source {
        const char *name;
        int (*begin)(struct oauth_key_load *l, const char *credentials_dir, const char *state_dir,
                     uint8_t key[OAUTH_KEY_SIZE], char **error);
};

static void key_from_text(const char *text, uint8_t key[OAUTH_KEY_SIZE]) {
        SHA256((const unsigned char *)text, strlen(text), key);
}

static int credential_begin(struct oauth_key_load *l, const char *credentials_dir, const char *state_dir,
                            uint8_t key[OAUTH_KEY_SIZE], char **error) {
        _cleanup_free_ char *text = NULL;

        if (!credentials_dir || credential_read(credentials_dir, OAUTH_KEY_CREDENTIAL, &text) < 0)
                return -ENOENT;
        if (strlen(text) < 32) {
                explicit_bzero(text, strlen(text));
                text_error(error, "credential '%s' is too short: give at least 32 random characters "
                                  "(e.g. from openssl rand -hex 32)", OAUTH_KEY_CREDENTIAL);
                return -EINVAL;
        }
        key_from_text(text, key);
        explicit_bzero(text, strlen(text));
        return 0;
}

/* systemd-creds in $PATH, else where distributions put it. Malloc'd, or NULL. */
static char *creds_program(void) {
        const char *path = getenv("PATH");
        _cleanup_free_ char *dirs = strdup(path && *path ? path : "/usr/bin:/bin");
        char *p = NULL;

        for (char *save = NULL, *dir = dirs ? strtok_r(dirs, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
                if (*dir != '/' || asprintf(&p, "%s/systemd-creds", dir) < 0) {
                        p = NULL;
                        continue;
                }
                if (access(p, X_OK) == 0)
                        return p;
                free(p);
                p = NULL;
        }
        return access("/usr/bin/systemd-creds", X_OK) == 0 ? strdup("/usr/bin/systemd-creds") : NULL;
}

static void child_end(struct oauth_key_load *l) {
        if (l->out_event)
                event_free(l->out_event);
        l->out_event = NULL;
        closep(&l->out_fd);
        l->out_fd = -1;
        if (l->child.pid && !l->child.reaped) {
                (void)pidfd_signal(l->child.pidfd, l->child.pid, SIGKILL);
                if (l->child.pidfd >= 0) {
                        siginfo_t si;

                        (void)waitid(P_PIDFD, (id_t)l->child.pidfd, &si, WEXITED);
                }
        }
        process_done(&l->child);
        process_init(&l->child);
}

static void on_output(evutil_socket_t fd, short what, void *userdata);
static void on_child_exit(struct process *p, void *userdata);

/* Runs systemd-creds with args, input on its stdin: 0, or a negative errno. */
static int creds_run(struct oauth_key_load *l, const char *const *args, const char *input) {
        char *argv[8];
        int in[2] = { -1, -1 }, out[2] = { -1, -1 }, stdio[3], r;
        size_t n = 0;

        argv[n++] = l->prog;
        for (; *args && n < 7; args++)
                argv[n++] = (char *)*args;
        argv[n] = NULL;
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0) {
                r = -errno;
                closep(&in[0]);
                closep(&in[1]);
                return r;
        }
        stdio[0] = in[0];
        stdio[1] = out[1];
        stdio[2] = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (stdio[2] < 0) {
                r = -errno;
                close(in[0]), close(in[1]), close(out[0]), close(out[1]);
                return r;
        }
        l->len = 0;
        l->out[0] = '\0';
        r = process_spawn(&l->child, l->base, l->prog, argv, environ, NULL, NULL, stdio, on_child_exit, l);
        if (r < 0) {
                close(in[1]);
                close(out[0]);
                return r;
        }
        /* a few dozen bytes: the pipe takes them at once */
        if (input && write(in[1], input, strlen(input)) < 0)
                r = -errno;
        close(in[1]);
        l->out_fd = out[0];
        l->out_event = event_new(l->base, l->out_fd, EV_READ | EV_PERSIST, on_output, l);
        if (!l->out_event || event_add(l->out_event, NULL) < 0)
                r = -ENOMEM;
        if (r < 0)
                child_end(l);
        return r;
}

static int creds_decrypt(struct oauth_key_load *l) {
        l->step = CREDS_DECRYPT;
        return creds_run(l, (const char *const[]){ "decrypt", "--name=" OAUTH_KEY_CREDENTIAL, l->path, "-", NULL }, NULL);
}

static int creds_encrypt(struct oauth_key_load *l) {
        uint8_t raw[OAUTH_KEY_SIZE];
        char hex[2 * OAUTH_KEY_SIZE + 1];
        int r;

        if (RAND_bytes(raw, sizeof raw) != 1)
                return -EIO;
        for (size_t i = 0; i < sizeof raw; i++)
                snprintf(hex + 2 * i, 3, "%02x", raw[i]);
        explicit_bzero(raw, sizeof raw);
        l->step = CREDS_ENCRYPT;
        r = creds_run(l, (const char *const[]){ "encrypt", "--name=" OAUTH_KEY_CREDENTIAL, "-", l->path, NULL }, hex);
        explicit_bzero(hex, sizeof hex);
        return r;
}

static int creds_begin(struct oauth_key_load *l, const char *credentials_dir, const char *state_dir,
                       uint8_t key[OAUTH_KEY_SIZE], char **error) {
        int r;

        if (!state_dir || !(l->prog = creds_program()))
                return -ENOENT;
        if (asprintf(&l->path, "%s/oauth-key.cred", state_dir) < 0) {
                l->path = NULL;
                return -ENOMEM;
        }
        r = access(l->path, F_OK) == 0 ? creds_decrypt(l) : creds_encrypt(l);
        if (r < 0) {
                text_error(error, "cannot run %s: %s", l->prog, strerror(-r));
                return r;
        }
        return 1;
}

static const struct key_source sources[] = {
        { "credential", credential_begin },
        { "systemd-creds", creds_begin },
};

/* The child is over and its output read: the next step, or the end. */
static void step_over(struct oauth_key_load *l) {
        bool ok = l->child.code == CLD_EXITED && l->child.status == 0;
        _cleanup_free_ char *error = NULL;
        uint8_t key[OAUTH_KEY_SIZE];

        child_end(l);
        if (l->step == CREDS_ENCRYPT) {
                if (ok) {
                        (void)chmod(l->path, 0600); /* sealed, but no one else's to read */
                        if (creds_decrypt(l) == 0)
                                return;
                }
                unlink(l->path);
                text_error(&error, "systemd-creds encrypt could not seal a new key into %s", l->path);
                l->done(NULL, error, l->userdata);
                return;
        }
        l->out[strcspn(l->out, "\n")] = '\0';
        if (!ok || strlen(l->out) < 32) {
                explicit_bzero(l->out, sizeof l->out);
                text_error(&error, "systemd-creds decrypt could not open %s (made on another host?)", l->path);
                l->done(NULL, error, l->userdata);
                return;
        }
        key_from_text(l->out, key);
        explicit_bzero(l->out, sizeof l->out);
        l->done(key, NULL, l->userdata);
        explicit_bzero(key, sizeof key);
}

static void on_output(evutil_socket_t fd, short what, void *userdata) {
        struct oauth_key_load *l = userdata;
        char spill[512];

        for (;;) {
                bool room = l->len + 1 < sizeof l->out;
                ssize_t n = room ? read(fd, l->out + l->len, sizeof l->out - 1 - l->len) : read(fd, spill, sizeof spill);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0)
                        break;
                if (room) {
                        l->len += (size_t)n;
                        l->out[l->len] = '\0';
                }
        }
        event_free(l->out_event);
        l->out_event = NULL;
        closep(&l->out_fd);
        l->out_fd = -1;
        if (l->child.reaped)
                step_over(l);
}

static void on_child_exit(struct process *p, void *userdata) {
        struct oauth_key_load *l = userdata;

        if (process_reap(p) == 1 && l->out_fd < 0)
                step_over(l);
}

bool oauth_key_load_reap(struct oauth_key_load *l, pid_t pid) {
        if (!l || !l->child.pid || l->child.pid != pid)
                return false;
        /* reaped here; its pidfd's event (edge-triggered, still due) then finds it reaped */
        (void)process_reap(&l->child);
        if (l->child.reaped && l->child.exit_event)
                event_active(l->child.exit_event, EV_READ, 0);
        return true;
}

void oauth_key_load_free(struct oauth_key_load *l) {
        if (!l)
                return;
        child_end(l);
        free(l->prog);
        free(l->path);
        free(l);
}

int oauth_key_load(struct event_base *base, const char *credentials_dir, const char *state_dir,
                   uint8_t key[OAUTH_KEY_SIZE], oauth_key_done_fn done, void *userdata, struct oauth_key_load **ret,
                   char **error) {
        struct oauth_key_load *l = calloc(1, sizeof *l);
        int r = -ENOENT;

        if (!l)
                return -ENOMEM;
        *l = (struct oauth_key_load){ .base = base, .out_fd = -1, .done = done, .userdata = userdata };
        process_init(&l->child);
        for (size_t i = 0; i < ARRAY_SIZE(sources) && r == -ENOENT; i++)
                r = sources[i].begin(l, credentials_dir, state_dir, key, error);
        if (r == 1) {
                *ret = l;
                return 1;
        }
        oauth_key_load_free(l);
        if (r == -ENOENT) {
                text_error(error, "no key to keep sign-in tokens encrypted: give the credential '%s' "
                                  "(LoadCredential=%s:/path in mcpvisor.service, 32 random characters or more), "
                                  "or run where systemd-creds can seal one (systemd 250 or later)",
                           OAUTH_KEY_CREDENTIAL, OAUTH_KEY_CREDENTIAL);
                return -ENOKEY;
        }
        return r;
}
