/* Bytes lent by reference rather than copied: a large line a server wrote goes to a
 * client's output where it was read, and stays there until written.
 *
 * A loan owns one region of memory; every holder has a reference, and the last one to let
 * it go (loan_put()) frees the region through the loan's own free(). Whoever lends stops
 * writing to the region when it lends: the bytes a holder was given never change.
 *
 * A loan_offer is what the code handling some bytes may take a loan of instead of copying
 * them: the bytes that would stay valid, and how to take them. Taking may cost the lender
 * something (the framer moves what follows the line to a buffer of its own), so a holder
 * takes only what is worth it (large parts it would otherwise copy). */
#pragma once

#include <stddef.h>

struct loan {
        unsigned refs;
        void (*free)(struct loan *l);
};

struct loan_offer {
        const char *data;            /* the bytes that may be lent */
        size_t len;
        /* A loan holding data with a reference for the caller, or NULL (out of memory:
         * copy instead). May be called more than once; each call is a reference. */
        struct loan *(*take)(const struct loan_offer *o);
};

/* A reference more. */
struct loan *loan_hold(struct loan *l);
/* Lets a reference go; the last frees the region. l may be NULL. */
void loan_put(struct loan *l);

/* A loan of len bytes at p when o (which may be NULL) offers all of them, with a reference
 * for the caller; NULL when it does not, or taking failed. */
struct loan *loan_take(const struct loan_offer *o, const void *p, size_t len);

/* loan_put() in the form of libevent's evbuffer_add_reference() cleanup (evbuffer's
 * bytes lent by reference: what is written from them is dropped once written). */
void loan_release_cb(const void *data, size_t len, void *loan);
