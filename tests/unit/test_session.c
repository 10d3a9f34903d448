/* The session's phase moves only forward, and only through session.c: initialize from new,
 * notifications/initialized from initializing; anything else changes nothing. */
#include <criterion/criterion.h>
#include <errno.h>

#include "request-meta.h"
#include "server-config.h"
#include "session.h"

Test(session, phases_move_forward_only) {
        struct session s;
        json_object *info = json_object_new_object();

        json_object_object_add(info, "name", json_object_new_string("agent\n\x1b[2J"));
        json_object_object_add(info, "version", json_object_new_int(7));

        session_init(&s);
        cr_assert_not(session_begin_operating(&s), "operating before initialize");
        cr_assert_eq(s.phase, SESSION_NEW);
        cr_assert_eq(session_initialize(&s, "2025-06-18", NULL, info), 0);
        cr_assert_eq(s.phase, SESSION_INITIALIZING);
        cr_assert_not(session_operating(&s));
        cr_assert_eq(session_initialize(&s, "2024-11-05", NULL, NULL), -EALREADY);
        cr_assert_str_eq(s.protocol_version, "2025-06-18", "a second initialize changed the session");
        cr_assert_str_eq(s.client_name, "agent[2J", "shown without its control characters");
        cr_assert_null(s.client_version, "not a string: none");
        cr_assert_eq(s.client_caps, 0, "absent capabilities declare none");
        cr_assert(session_begin_operating(&s));
        cr_assert(session_operating(&s));
        cr_assert_not(session_begin_operating(&s), "initialized twice");
        cr_assert_eq(session_initialize(&s, "2025-06-18", NULL, NULL), -EALREADY);
        cr_assert(session_operating(&s));
        json_object_put(info);
        session_done(&s);
        cr_assert_eq(s.phase, SESSION_NEW);
}

/* Only which capabilities the client declared is kept, not its JSON: each is looked up by
 * name, whatever its value, and keys the daemon does not know are not kept. */
Test(session, capabilities_kept_as_bits) {
        json_object *caps = json_tokener_parse("{\"sampling\":{},\"elicitation\":null,\"experimental\":{}}");
        struct session s;

        session_init(&s);
        cr_assert_eq(session_initialize(&s, "2025-06-18", caps, NULL), 0);
        cr_assert_eq(s.client_caps, (1u << CLIENT_CAP_SAMPLING) | (1u << CLIENT_CAP_ELICITATION));
        json_object_put(caps);
        session_done(&s);
        cr_assert_eq(s.client_caps, 0);
}

/* URL-mode elicitation is a mode, kept as a bit of its own: "elicitation": {"url": {}}
 * declares it; {} (form only), {"form": {}} and a value that is no object do not. */
Test(session, url_elicitation_kept_as_a_bit) {
        static const struct {
                const char *caps;
                unsigned bits;
        } cases[] = {
                { "{\"elicitation\":{\"url\":{}}}", (1u << CLIENT_CAP_ELICITATION) | CLIENT_CAP_URL_ELICITATION },
                { "{\"elicitation\":{\"form\":{},\"url\":{}}}", (1u << CLIENT_CAP_ELICITATION) | CLIENT_CAP_URL_ELICITATION },
                { "{\"elicitation\":{}}", 1u << CLIENT_CAP_ELICITATION },
                { "{\"elicitation\":{\"form\":{}}}", 1u << CLIENT_CAP_ELICITATION },
                { "{\"elicitation\":\"url\"}", 1u << CLIENT_CAP_ELICITATION },
                { "{\"url\":{}}", 0 },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                json_object *caps = json_tokener_parse(cases[i].caps);
                struct session s;

                session_init(&s);
                cr_assert_eq(session_initialize(&s, "2025-11-25", caps, NULL), 0);
                cr_assert_eq(s.client_caps, cases[i].bits, "%s", cases[i].caps);
                cr_assert_eq(client_caps_of(caps), cases[i].bits, "%s", cases[i].caps);
                json_object_put(caps);
                session_done(&s);
        }
}
