/* When the HTTP listener counts descriptors as short and pauses (http_listen_short): fewer
 * than the reserve left above the lowest free descriptor, or none at all. */
#include <criterion/criterion.h>
#include <errno.h>

#include "http-listen.h"

Test(http_listen, short_of_descriptors) {
        cr_assert_not(http_listen_short(10, 256, 32));
        cr_assert_not(http_listen_short(223, 256, 32));
        cr_assert(http_listen_short(224, 256, 32), "fewer than the reserve left");
        cr_assert(http_listen_short(255, 256, 32));
        cr_assert(http_listen_short(-EMFILE, 256, 32), "none left");
}
