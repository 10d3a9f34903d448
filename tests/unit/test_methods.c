/* The method table (methods.c) and the dispatcher's rule over it: every method's flags,
 * eras and reach set coherently, and what session.c does with a message (handle it, pass
 * it through, refuse it before initialize, or not find it) decided from those alone. */
#include <criterion/criterion.h>
#include <string.h>

#include "methods.h"

#define KNOWN_FLAGS (METHOD_BEFORE_INIT | METHOD_MCP | METHOD_CONTROL | METHOD_PASSTHROUGH)

static void check_method(const struct method *m, enum jsonrpc_kind kind) {
        cr_assert(m->name && *m->name, "a method without a name");
        cr_assert(m->handle, "%s has no handler", m->name);
        cr_assert_eq(m->flags & ~KNOWN_FLAGS, 0, "%s has unknown flags", m->name);
        cr_assert(m->flags & (METHOD_MCP | METHOD_CONTROL), "%s is served on no socket", m->name);
        cr_assert(m->eras != 0 && (m->eras & ~METHOD_ERAS_ALL) == 0, "%s has no era, or an unknown one", m->name);
        cr_assert_lt((int)m->reach, _METHOD_REACH_MAX, "%s has no reach", m->name);
        if (m->flags & METHOD_MCP)
                cr_assert_eq(kind == JSONRPC_REQUEST ? methods_find_request(LISTEN_MCP, m->name)
                                                     : methods_find_notification(LISTEN_MCP, m->name),
                             m, "%s is found as another entry on the MCP socket", m->name);
        if (m->flags & METHOD_CONTROL) {
                cr_assert_eq(kind == JSONRPC_REQUEST ? methods_find_request(LISTEN_CONTROL, m->name)
                                                     : methods_find_notification(LISTEN_CONTROL, m->name),
                             m, "%s is found as another entry on the control socket", m->name);
                /* The control socket has no session to open and reaches no server itself. */
                cr_assert(m->flags & METHOD_BEFORE_INIT, "control method %s waits for an initialize", m->name);
                cr_assert(m->eras & METHOD_ERA_INITIALIZE, "control method %s outside the control socket's era", m->name);
                cr_assert_eq(m->reach, METHOD_REACH_DAEMON, "control method %s reaches a server", m->name);
        }
        /* Nothing reaches a server before the client's session is open. */
        if ((m->flags & METHOD_BEFORE_INIT) && (m->flags & METHOD_MCP))
                cr_assert_eq(m->reach, METHOD_REACH_DAEMON, "%s reaches a server before initialize", m->name);
        /* What goes unchanged to a server is judged on the server's own rule: a method that
         * names an item or a request has it mapped and judged, and must not go unchanged. */
        if (m->flags & METHOD_PASSTHROUGH) {
                cr_assert_eq(m->reach, METHOD_REACH_SERVER, "%s passes through but names what is mapped", m->name);
                cr_assert(m->flags & METHOD_MCP, "%s passes through from the control socket", m->name);
        }
}

Test(methods, every_method_is_coherent) {
        enum jsonrpc_kind kinds[] = { JSONRPC_REQUEST, JSONRPC_NOTIFICATION };

        for (size_t k = 0; k < 2; k++) {
                size_t n;
                const struct method *const *t = methods_table(kinds[k], &n);

                cr_assert_gt(n, 0);
                for (size_t i = 0; i < n; i++) {
                        check_method(t[i], kinds[k]);
                        for (size_t j = 0; j < i; j++)
                                cr_assert(strcmp(t[i]->name, t[j]->name) != 0 || !(t[i]->flags & t[j]->flags & (METHOD_MCP | METHOD_CONTROL)),
                                          "%s twice on one socket", t[i]->name);
                }
        }
}

static const struct method *request(const char *name) {
        const struct method *m = methods_find_request(LISTEN_MCP, name);

        cr_assert(m, "%s is not in the table", name);
        return m;
}

/* What 2026-07-28 removes exists only in the initialize era; its probe is answered in both. */
Test(methods, eras_follow_the_specification) {
        const char *removed[] = { "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe" };
        const char *both[] = { "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
                               "tools/call", "prompts/get", "resources/read", "completion/complete" };

        for (size_t i = 0; i < sizeof removed / sizeof *removed; i++)
                cr_assert_eq(request(removed[i])->eras, METHOD_ERA_INITIALIZE, "%s", removed[i]);
        for (size_t i = 0; i < sizeof both / sizeof *both; i++)
                cr_assert_eq(request(both[i])->eras, METHOD_ERAS_ALL, "%s", both[i]);
        cr_assert_eq(methods_find_notification(LISTEN_MCP, "notifications/initialized")->eras, METHOD_ERA_INITIALIZE);
        cr_assert_eq(methods_find_notification(LISTEN_MCP, "notifications/cancelled")->eras, METHOD_ERAS_ALL);
        cr_assert(request("server/discover")->flags & METHOD_BEFORE_INIT, "the probe must be answered before initialize");
}

/* The routes per-instance routing will follow: calls by what they name, cancels by the request. */
Test(methods, reach_says_where_a_message_goes) {
        cr_assert_eq(request("tools/call")->reach, METHOD_REACH_ITEM);
        cr_assert_eq(request("resources/subscribe")->reach, METHOD_REACH_ITEM);
        cr_assert_eq(request("logging/setLevel")->reach, METHOD_REACH_HEARD);
        cr_assert_eq(request("tools/list")->reach, METHOD_REACH_DAEMON);
        cr_assert_eq(methods_find_notification(LISTEN_MCP, "notifications/cancelled")->reach, METHOD_REACH_REQUEST);
}

static void noop(struct client *c, struct jsonrpc_msg *m) {
}

static const struct method early = { "t/early", METHOD_MCP | METHOD_BEFORE_INIT, METHOD_ERAS_ALL, METHOD_REACH_DAEMON, noop };
static const struct method later = { "t/later", METHOD_MCP, METHOD_ERAS_ALL, METHOD_REACH_ITEM, noop };
static const struct method legacy = { "t/legacy", METHOD_MCP, METHOD_ERA_INITIALIZE, METHOD_REACH_HEARD, noop };
static const struct method legacy_pass = { "t/legacy-pass", METHOD_MCP | METHOD_PASSTHROUGH, METHOD_ERA_INITIALIZE,
                                           METHOD_REACH_SERVER, noop };
static const struct method modern = { "t/modern", METHOD_MCP, METHOD_ERA_STATELESS, METHOD_REACH_DAEMON, noop };

#define ACT(m, role, era, phase) method_action_of(m, role, era, phase)

Test(methods, before_initialize_only_what_needs_no_session) {
        cr_assert_eq(ACT(&early, LISTEN_MCP, METHOD_ERA_INITIALIZE, SESSION_NEW), METHOD_HANDLE);
        cr_assert_eq(ACT(&later, LISTEN_MCP, METHOD_ERA_INITIALIZE, SESSION_NEW), METHOD_TOO_EARLY);
        cr_assert_eq(ACT(NULL, LISTEN_MCP, METHOD_ERA_INITIALIZE, SESSION_NEW), METHOD_TOO_EARLY, "unknown, before initialize");
        cr_assert_eq(ACT(&modern, LISTEN_MCP, METHOD_ERA_INITIALIZE, SESSION_NEW), METHOD_TOO_EARLY);
        for (enum session_phase p = SESSION_INITIALIZING; p <= SESSION_OPERATING; p++) {
                cr_assert_eq(ACT(&later, LISTEN_MCP, METHOD_ERA_INITIALIZE, p), METHOD_HANDLE);
                cr_assert_eq(ACT(&early, LISTEN_MCP, METHOD_ERA_INITIALIZE, p), METHOD_HANDLE);
        }
}

Test(methods, unknown_methods_pass_through_on_the_mcp_socket_only) {
        cr_assert_eq(ACT(NULL, LISTEN_MCP, METHOD_ERA_INITIALIZE, SESSION_OPERATING), METHOD_PASS);
        cr_assert_eq(ACT(NULL, LISTEN_CONTROL, METHOD_ERA_INITIALIZE, SESSION_NEW), METHOD_NOT_FOUND);
        /* The control socket has no session to open. */
        cr_assert_eq(ACT(&later, LISTEN_CONTROL, METHOD_ERA_INITIALIZE, SESSION_NEW), METHOD_HANDLE);
}

/* Outside its eras a method is the daemon's own (not found) unless marked to pass through. */
Test(methods, eras_decide_and_passthrough_is_data) {
        cr_assert_eq(ACT(&modern, LISTEN_MCP, METHOD_ERA_INITIALIZE, SESSION_OPERATING), METHOD_NOT_FOUND);
        cr_assert_eq(ACT(&legacy, LISTEN_MCP, METHOD_ERA_STATELESS, SESSION_NEW), METHOD_NOT_FOUND);
        cr_assert_eq(ACT(&legacy_pass, LISTEN_MCP, METHOD_ERA_STATELESS, SESSION_NEW), METHOD_PASS);
        cr_assert_eq(ACT(&legacy_pass, LISTEN_MCP, METHOD_ERA_INITIALIZE, SESSION_OPERATING), METHOD_HANDLE);
        /* A stateless-era client has no session: nothing waits for an initialize. */
        cr_assert_eq(ACT(&modern, LISTEN_MCP, METHOD_ERA_STATELESS, SESSION_NEW), METHOD_HANDLE);
        cr_assert_eq(ACT(&later, LISTEN_MCP, METHOD_ERA_STATELESS, SESSION_NEW), METHOD_HANDLE);
        cr_assert_eq(ACT(NULL, LISTEN_MCP, METHOD_ERA_STATELESS, SESSION_NEW), METHOD_PASS);
}

static enum method_action dispatch(enum listen_role role, enum method_era era, enum session_phase phase,
                                   enum jsonrpc_kind kind, const char *name) {
        const struct method *m;
        enum method_action a = methods_dispatch(role, era, phase, kind, name, &m);

        cr_assert(a != METHOD_HANDLE || (m && (m->eras & era)), "%s: handled without its entry in its era", name);
        return a;
}

/* The real table through the dispatcher, as session.c asks it. */
Test(methods, the_table_through_the_dispatcher) {
        const enum method_era I = METHOD_ERA_INITIALIZE, S = METHOD_ERA_STATELESS;

        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_NEW, JSONRPC_REQUEST, "initialize"), METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_NEW, JSONRPC_REQUEST, "ping"), METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_NEW, JSONRPC_REQUEST, "server/discover"), METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_NEW, JSONRPC_REQUEST, "tools/list"), METHOD_TOO_EARLY);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_OPERATING, JSONRPC_REQUEST, "tools/list"), METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_OPERATING, JSONRPC_REQUEST, "tasks/get"), METHOD_PASS);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_OPERATING, JSONRPC_REQUEST, "status"), METHOD_PASS,
                     "a control method is unknown on the MCP socket");
        cr_assert_eq(dispatch(LISTEN_CONTROL, I, SESSION_NEW, JSONRPC_REQUEST, "status"), METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_CONTROL, I, SESSION_NEW, JSONRPC_REQUEST, "ping"), METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_CONTROL, I, SESSION_NEW, JSONRPC_REQUEST, "tools/call"), METHOD_NOT_FOUND);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_NEW, JSONRPC_NOTIFICATION, "notifications/mcpvisor/profile"), METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_NEW, JSONRPC_NOTIFICATION, "notifications/initialized"), METHOD_TOO_EARLY);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_INITIALIZING, JSONRPC_NOTIFICATION, "notifications/initialized"),
                     METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_MCP, I, SESSION_OPERATING, JSONRPC_NOTIFICATION, "notifications/message"), METHOD_PASS);
        /* The stateless era as the table already describes it. */
        cr_assert_eq(dispatch(LISTEN_MCP, S, SESSION_NEW, JSONRPC_REQUEST, "tools/call"), METHOD_HANDLE);
        cr_assert_eq(dispatch(LISTEN_MCP, S, SESSION_NEW, JSONRPC_REQUEST, "logging/setLevel"), METHOD_NOT_FOUND);
        cr_assert_eq(dispatch(LISTEN_MCP, S, SESSION_NEW, JSONRPC_REQUEST, "initialize"), METHOD_NOT_FOUND);
        cr_assert_eq(dispatch(LISTEN_MCP, S, SESSION_NEW, JSONRPC_REQUEST, "resources/subscribe"), METHOD_NOT_FOUND);
        cr_assert_eq(dispatch(LISTEN_MCP, S, SESSION_NEW, JSONRPC_NOTIFICATION, "notifications/cancelled"), METHOD_HANDLE);
}
