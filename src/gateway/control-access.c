/* Who may use the control socket: root, the daemon's own user, and members of the
 * configured controlGroup (primary or supplementary group of the peer, as its principal
 * holds them). The socket's file mode is the first gate; this is the second, so a socket
 * left world-writable by mistake still gives nobody control. */
#include "control-access.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "principal.h"

static bool in_group(const struct principal *p, gid_t gid) {
        if (p->gid == gid)
                return true;
        for (size_t i = 0; i < p->n_groups; i++)
                if (p->groups[i] == gid)
                        return true;
        return false;
}

static int group_id(const char *name, gid_t *ret) {
        struct group grp, *found = NULL;
        char buf[4096];
        int r = getgrnam_r(name, &grp, buf, sizeof buf, &found);

        if (r != 0)
                return -r;
        if (!found)
                return -ENOENT;
        *ret = found->gr_gid;
        return 0;
}

bool control_access_allowed(const char *control_group, const struct principal *peer, char *why, size_t size) {
        gid_t gid;

        if (peer->uid == 0 || peer->uid == geteuid())
                return true;
        if (control_group && group_id(control_group, &gid) == 0 && in_group(peer, gid))
                return true;
        if (control_group)
                snprintf(why, size,
                         "permission denied: the control socket is for root, the daemon's user (uid %u) and group %s; uid %u is none of them",
                         (unsigned)geteuid(), control_group, (unsigned)peer->uid);
        else
                snprintf(why, size,
                         "permission denied: the control socket is for root and the daemon's user (uid %u); set controlGroup to admit a group",
                         (unsigned)geteuid());
        return false;
}
