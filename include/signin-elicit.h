/* The sign-in link as a URL-mode elicitation (MCP 2025-11-25, client/elicitation): a call
 * to a server reached by URL that needs a sign-in, from a client that declared
 * `elicitation: {url: {}}` and may sign in for that server's token, is answered with
 * URLElicitationRequiredError (-32042) carrying the authorization URL, instead of the text
 * naming `mcpvisorctl login NAME`. A modern (2026-07-28) call, whose era has no -32042,
 * is answered input_required with the link as a url elicitation and a requestState of the
 * daemon's own (mrtr.h), whose retry method_send_to() lets through as the call again.
 *
 * The daemon drives the sign-in itself, as control-login.c does for mcpvisorctl (the same
 * oauth_signin_begin()), with a loopback redirect listener of its own (127.0.0.1, a port
 * the kernel chooses, RFC 8252) opened for that sign-in and closed when it completes,
 * fails or times out. One sign-in per (server, token owner): a second call, from the same
 * client or another of the same user, joins it (same URL, same elicitationId); another
 * user's gets its own. When the token is kept, every client that was given the
 * elicitation and is still connected gets notifications/elicitation/complete, and retries.
 *
 * Who may: a per-user instance's user for their own token; for a shared server's token,
 * whoever may use the control socket (control-access.h), as for `mcpvisorctl login`.
 * Nothing here logs the URL's state, the code or a token. */
#pragma once

#include <stdbool.h>

struct client;
struct daemon;
struct jsonrpc_msg;
struct server;

/* m (c's call) cannot reach s, which is not serving. When s waits for a sign-in that c
 * may give, and c takes URL elicitation, the sign-in is begun or joined and m is answered
 * (now, or once the URL is known): true. Otherwise false, nothing done. */
bool signin_elicit_offer(struct client *c, struct jsonrpc_msg *m, struct server *s);
/* c is being freed: it is owed no answer or notification any more. */
void signin_elicit_client_gone(struct daemon *d, struct client *c);
/* Every sign-in ended (the daemon's exit). */
void signin_elicit_done(struct daemon *d);
