/* The key of the tokens at rest: a credential, else one sealed by systemd-creds; see
 * oauth-key.h. */
#include "oauth-key.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "credential.h"
#include "macro.h"
#include "text.h"

extern char **environ;

static const char *creds_program(void) {
        static const char *const places[] = { "/usr/bin/systemd-creds", "/bin/systemd-creds" };

        for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
                if (access(places[i], X_OK) == 0)
                        return places[i];
        return NULL;
}

/* Runs argv with input on its stdin and up to size - 1 bytes of its stdout into out.
 * 0 when it exited 0; a negative errno otherwise. */
static int run_creds(char *const argv[], const char *input, char *out, size_t size) {
        posix_spawn_file_actions_t fa;
        int in_pipe[2], out_pipe[2], status = 0, r;
        size_t len = 0;
        pid_t pid;

        if (pipe2(in_pipe, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(out_pipe, O_CLOEXEC) < 0) {
                r = -errno;
                close(in_pipe[0]);
                close(in_pipe[1]);
                return r;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
        r = -posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(in_pipe[0]);
        close(out_pipe[1]);
        if (r == 0 && input && write(in_pipe[1], input, strlen(input)) < 0)
                r = -errno;
        close(in_pipe[1]);
        while (r == 0 || r == -EPIPE) {
                ssize_t n = len + 1 < size ? read(out_pipe[0], out + len, size - 1 - len) : 0;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        if (size)
                out[len] = '\0';
        close(out_pipe[0]);
        if (r < 0 && r != -EPIPE)
                return r;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static int key_from_text(const char *text, uint8_t key[OAUTH_KEY_SIZE]) {
        SHA256((const unsigned char *)text, strlen(text), key);
        return 0;
}

/* STATE/oauth-key.cred opened, or made first. */
static int key_from_systemd_creds(const char *prog, const char *state_dir, uint8_t key[OAUTH_KEY_SIZE], char **error) {
        _cleanup_free_ char *path = NULL, *hex = NULL;
        char out[256];
        uint8_t raw[OAUTH_KEY_SIZE];
        int r;

        if (asprintf(&path, "%s/oauth-key.cred", state_dir) < 0)
                return -ENOMEM;
        if (access(path, F_OK) < 0) {
                char *const argv[] = { (char *)prog, "encrypt", "--name=" OAUTH_KEY_CREDENTIAL, "-", path, NULL };

                if (RAND_bytes(raw, sizeof raw) != 1)
                        return -EIO;
                hex = malloc(2 * sizeof raw + 1);
                if (!hex)
                        return -ENOMEM;
                for (size_t i = 0; i < sizeof raw; i++)
                        sprintf(hex + 2 * i, "%02x", raw[i]);
                explicit_bzero(raw, sizeof raw);
                r = run_creds(argv, hex, out, sizeof out);
                explicit_bzero(hex, strlen(hex));
                if (r < 0) {
                        unlink(path);
                        text_error(error, "systemd-creds encrypt could not seal a new key into %s", path);
                        return r;
                }
                (void)chmod(path, 0600); /* sealed, but no one else's to read */
        }
        char *const argv[] = { (char *)prog, "decrypt", "--name=" OAUTH_KEY_CREDENTIAL, path, "-", NULL };
        r = run_creds(argv, NULL, out, sizeof out);
        if (r < 0 || strlen(out) < 32) {
                text_error(error, "systemd-creds decrypt could not open %s (made on another host?)", path);
                explicit_bzero(out, sizeof out);
                return r < 0 ? r : -EBADMSG;
        }
        out[strcspn(out, "\n")] = '\0';
        key_from_text(out, key);
        explicit_bzero(out, sizeof out);
        return 0;
}

int oauth_key_load(const char *credentials_dir, const char *state_dir, uint8_t key[OAUTH_KEY_SIZE], char **error) {
        _cleanup_free_ char *text = NULL;
        const char *prog;
        int r;

        if (credentials_dir && credential_read(credentials_dir, OAUTH_KEY_CREDENTIAL, &text) == 0) {
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
        prog = creds_program();
        if (prog && state_dir) {
                r = key_from_systemd_creds(prog, state_dir, key, error);
                if (r >= 0 || *error)
                        return r;
        }
        text_error(error, "no key to keep sign-in tokens encrypted: give the credential '%s' "
                          "(LoadCredential=%s:/path in mcpvisor.service, 32 random characters or more), "
                          "or run where systemd-creds can seal one (systemd 250 or later)",
                   OAUTH_KEY_CREDENTIAL, OAUTH_KEY_CREDENTIAL);
        return -ENOKEY;
}
