/* The byte pump behind `mcpvisorctl connect`: a client's stdin to the daemon's MCP socket
 * and the socket to the client's stdout, any amount either way, never blocking on one side
 * while the other has bytes to move. It knows nothing of MCP: the daemon does the framing. */
#pragma once

/* How a bridge ended: its exit status and whether it said why on stderr. */
enum bridge_end {
        BRIDGE_DONE,          /* stdin ended, the daemon answered and closed, all of it written */
        BRIDGE_DAEMON_CLOSED, /* the daemon closed while the client was still talking to it */
        BRIDGE_CLIENT_GONE,   /* stdout is closed: nobody is left to read the answers */
        BRIDGE_FAILED,        /* an I/O error, said on stderr */
};

/* Copies in -> sock and sock -> out until the session is over:
 * - EOF on in: sock is shut down for writing once all of in went out; the daemon answers
 *   what is in flight and closes; we return once all of that is on out;
 * - the daemon closes: we return once what it sent is on out;
 * - out is closed by its reader (the client died, or gave up): we return at once, and the
 *   daemon sees the connection close, which cancels the client's calls.
 * sock must be non-blocking. in and out are left in the mode our parent gave them (they
 * are shared with it): a pipe is written through a non-blocking reopening of its own, a
 * socket with MSG_DONTWAIT. Does not close any of the three. */
enum bridge_end bridge_run(int in, int out, int sock);
