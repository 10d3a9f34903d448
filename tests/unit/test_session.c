/* The session's phase moves only forward, and only through session.c: initialize from new,
 * notifications/initialized from initializing; anything else changes nothing. */
#include <criterion/criterion.h>
#include <errno.h>

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
        cr_assert(json_object_is_type(s.client_capabilities, json_type_object), "absent capabilities are {}");
        cr_assert(session_begin_operating(&s));
        cr_assert(session_operating(&s));
        cr_assert_not(session_begin_operating(&s), "initialized twice");
        cr_assert_eq(session_initialize(&s, "2025-06-18", NULL, NULL), -EALREADY);
        cr_assert(session_operating(&s));
        json_object_put(info);
        session_done(&s);
        cr_assert_eq(s.phase, SESSION_NEW);
}
