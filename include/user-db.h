/* Lookups in the user and group databases (NSS) that several modules make: one place for
 * the buffer that grows until the answer fits. They may block as long as NSS does. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* The groups the group database gives user (primary group gid), gid among them: what
 * initgroups() would set. A fresh array in *ret, its length in *ret_n; 0, -ENOMEM, or
 * -ERANGE when the list keeps growing under us. */
int user_db_groups(const char *user, gid_t gid, gid_t **ret, size_t *ret_n);
