/* Lookups in the user and group databases; see user-db.h. */
#include "user-db.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>

#include "macro.h"

/* A start; getgrouplist() says how many it needs when there are more. */
#define USER_DB_GROUPS_START 32

int user_db_groups(const char *user, gid_t gid, gid_t **ret, size_t *ret_n) {
        int n = USER_DB_GROUPS_START;

        for (int tries = 0; tries < 4; tries++) {
                _cleanup_free_ gid_t *groups = malloc(sizeof(gid_t) * (size_t)n);
                int want = n;

                if (!groups)
                        return -ENOMEM;
                if (getgrouplist(user, gid, groups, &want) >= 0) {
                        *ret = TAKE_PTR(groups);
                        *ret_n = (size_t)want;
                        return 0;
                }
                n = want > n ? want : n * 4;
        }
        return -ERANGE;
}
