/* The daemon's sign-in tokens for its servers reached by URL with "auth": "oauth", one per
 * server and user (a shared server's is OAUTH_SHARED's, which an administrator's login
 * gives): kept sealed in STATE/tokens/ (oauth-seal.h, under oauth-key.h's key), loaded on
 * first need, refreshed at 80 % of their lifetime and after a server's 401 (once), and
 * forgotten (revoked at the authorization server where it can) by a logout.
 *
 * Each token is in one state:
 *   TOKEN_UNLOADED  its file not read yet (or waiting for the key that opens it)
 *   TOKEN_NONE      no sign-in (no file)
 *   TOKEN_VALID     usable: its access token is sent
 *   TOKEN_REFRESHING a refresh is under way (a start waits for it)
 *   TOKEN_SIGNIN    sign-in needed, with its cause (a refused refresh, a second 401, a file
 *                   that does not open, a 403 asking for more scope, another authorization
 *                   server): no retry until a login
 *   TOKEN_CHECKING  after a 401 naming the server's resource metadata: that metadata read
 *                   again first, for the token is bound to its authorization server (a
 *                   server that names another one now needs a sign-in there, SEP-2352)
 * moved by token_set_state() alone. A token's text is never logged, shown or put in an
 * error: the words name the server, the user and what happened. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct curl_loop;
struct event_base;
struct logger;
struct oauth_grant;
struct oauth_tokens;
struct server_config;

#define OAUTH_SHARED ((uid_t)-1)

enum token_state {
        TOKEN_UNLOADED,
        TOKEN_NONE,
        TOKEN_VALID,
        TOKEN_REFRESHING,
        TOKEN_SIGNIN,
        TOKEN_CHECKING,
        TOKEN_STATE_COUNT
};

/* The daemon's curl loop, made on first need (launcher-http.c). */
typedef int (*oauth_loop_fn)(void *userdata, struct curl_loop **ret, const char **error);

struct oauth_tokens_params {
        struct event_base *base;
        const struct logger *log;
        const char *credentials_dir;     /* for the key credential and clientSecret; NULL: none */
        const char *state_dir;           /* NULL: path_state_directory() */
        oauth_loop_fn loop;
        void *userdata;
};

int oauth_tokens_new(const struct oauth_tokens_params *params, struct oauth_tokens **ret);
void oauth_tokens_free(struct oauth_tokens *t);

/* Before a run of c for uid starts: 0 when a token is there to send; -EAGAIN while it is
 * being refreshed; -EACCES when a sign-in is needed, with *error (malloc'd) saying which
 * command to run and why. */
int oauth_tokens_ready(struct oauth_tokens *t, const struct server_config *c, uid_t uid, char **error);
/* The access token to send now for (server, uid) to url, or NULL: a token goes only to the
 * URL it was given for (a reload that changed "url" leaves it unsent). Valid until the
 * loop turns. */
const char *oauth_tokens_bearer(struct oauth_tokens *t, const char *server, uid_t uid, const char *url);
/* The server answered 401: true when its authorization server is being checked or a
 * refresh was started (a restart may help, once); false when a sign-in is needed now (the
 * token's cause says why). */
bool oauth_tokens_refused(struct oauth_tokens *t, const struct server_config *c, uid_t uid);
/* The server answered 403 insufficient_scope naming scope (RFC 6750 section 3.1): true
 * when a sign-in asking for more may help (the token needs one now, its cause naming the
 * scope, and the next login asks for what was asked before and scope: SEP-2350); false
 * when its sign-in asked for all of it already (nothing a login can change: not retried). */
bool oauth_tokens_scope_refused(struct oauth_tokens *t, const struct server_config *c, uid_t uid, const char *scope);
/* The authorization server (server, uid) was moved away from, and the client id it had
 * there (NULLs: none, since the daemon started): a login must not present that client to
 * another one (SEP-2352). */
void oauth_tokens_left(struct oauth_tokens *t, const struct server_config *c, uid_t uid, const char **issuer,
                       const char **client_id);
/* What the next login asks for after a step-up, or NULL ("scopes", or the server's). */
const char *oauth_tokens_wanted_scope(struct oauth_tokens *t, const struct server_config *c, uid_t uid);

/* Whether pid is the child that loads the tokens' key (systemd-creds): reaped then. */
bool oauth_tokens_child_exited(struct oauth_tokens *t, pid_t pid);
/* Whether (server, uid) waits for a sign-in: no token, or one that needs a new sign-in,
 * on a server that asks for one ("auth": "oauth", or a Bearer challenge seen). */
bool oauth_tokens_signin_needed(struct oauth_tokens *t, const struct server_config *c, uid_t uid);
/* Whether (server, uid) has a token to send (signed in, or being refreshed). */
bool oauth_tokens_have(struct oauth_tokens *t, const struct server_config *c, uid_t uid);
/* The server's last 401 named its resource metadata at url (RFC 9728 section 5.1): kept
 * for the next login's discovery. */
void oauth_tokens_note_metadata(struct oauth_tokens *t, const struct server_config *c, uid_t uid, const char *url);
/* That URL, or NULL. */
const char *oauth_tokens_metadata(struct oauth_tokens *t, const struct server_config *c, uid_t uid);

/* A login's grant (taken) becomes (server, uid)'s token, sealed and written first. 0, or a
 * negative errno with *error (malloc'd). */
int oauth_tokens_put(struct oauth_tokens *t, const struct server_config *c, uid_t uid, struct oauth_grant *grant,
                     char **error);
/* Forgets (server, uid)'s token: its file deleted, its refresh token (else its access
 * token) revoked at the authorization server where it has a revocation endpoint (RFC
 * 7009; not waited for). 0, or -ENOENT when there was none. */
int oauth_tokens_forget(struct oauth_tokens *t, const struct server_config *c, uid_t uid);

/* For the status answer: the state's name ("signed in", "sign-in needed", ...), and its
 * cause ("" none); never a token. */
const char *oauth_tokens_state_text(struct oauth_tokens *t, const struct server_config *c, uid_t uid,
                                    const char **cause);
/* Whose token, as logs say it: "shared" or "uid N". */
void oauth_subject_text(uid_t uid, char *buf, size_t size);
/* "mcpvisorctl login NAME" as the user must type it (as root for a shared server, as that
 * user for a per-user one). Malloc'd. */
char *oauth_login_command(const char *server, uid_t uid);
