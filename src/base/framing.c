/* Line framing; see framing.h. */
#include "framing.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A buffer larger than this is given back once empty, so an idle connection that once
 * carried a large message does not keep its memory. */
#define FRAMER_KEEP_BYTES 16384
#define FRAMER_MIN_BYTES 1024
#define FRAMER_READ_BYTES FRAMER_KEEP_BYTES
/* A read asks for at most this much room: a pipe or a socket gives no more at once. */
#define FRAMER_MAX_READ_BYTES (1024 * 1024)
/* From this size on the buffer is a mapping of its own, grown by mremap(), which moves
 * page tables rather than bytes: realloc() copied a multi-MiB line at each doubling once
 * malloc's threshold had risen to keep such blocks on the heap. The mapping asks for huge
 * pages, so filling 10 MiB takes a handful of page faults rather than thousands. */
#define FRAMER_MAP_BYTES (256 * 1024)
#define FRAMER_HUGE_BYTES (2 * 1024 * 1024)

static bool is_mapped(size_t cap) {
        return cap >= FRAMER_MAP_BYTES;
}

static void buffer_free(char *buf, size_t cap) {
        if (is_mapped(cap))
                munmap(buf, cap);
        else
                free(buf);
}

/* A mapping's size: a whole number of huge pages once it is as large as one. */
static size_t mapped_size(size_t n) {
        size_t unit = n >= FRAMER_HUGE_BYTES ? FRAMER_HUGE_BYTES : (size_t)sysconf(_SC_PAGESIZE);

        return (n + unit - 1) / unit * unit;
}

static char *map_new(size_t cap, const char *old, size_t len) {
        char *b = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (b == MAP_FAILED)
                return NULL;
        (void)madvise(b, cap, MADV_HUGEPAGE); /* a hint: without it, 4 KiB pages */
        if (len > 0)
                memcpy(b, old, len);
        return b;
}

/* The buffer at cap bytes, its first len kept; NULL when memory ran out (buf unchanged). */
static char *buffer_resize(char *buf, size_t old_cap, size_t len, size_t cap) {
        char *b;

        if (!is_mapped(cap))
                return realloc(buf, cap);
        if (!is_mapped(old_cap)) {
                b = map_new(cap, buf, len);
                if (b)
                        free(buf);
                return b;
        }
        b = mremap(buf, old_cap, cap, MREMAP_MAYMOVE);
        return b == MAP_FAILED ? NULL : b;
}

/* Where lent buffers come back to: the framer while it lives. One reference for the framer
 * and one for each loan out. */
struct framer_home {
        unsigned refs;
        struct framer *framer; /* NULL once the framer is done */
};

static void home_put(struct framer_home *h) {
        if (h && --h->refs == 0)
                free(h);
}

static void spare_free(struct framer *f) {
        if (f->spare)
                munmap(f->spare, f->spare_cap);
        f->spare = NULL;
        f->spare_cap = 0;
}

/* A mapping of at least cap bytes for an unmapped buffer to grow into: the spare, grown if
 * need be; NULL when there is none (or it could not grow, then it is given back). */
static char *take_spare(struct framer *f, size_t *cap) {
        char *b = f->spare;

        if (!b)
                return NULL;
        if (f->spare_cap < *cap) {
                b = mremap(b, f->spare_cap, *cap, MREMAP_MAYMOVE);
                if (b == MAP_FAILED) {
                        spare_free(f);
                        return NULL;
                }
        } else {
                *cap = f->spare_cap;
        }
        f->spare = NULL;
        f->spare_cap = 0;
        return b;
}

void framer_init(struct framer *f, size_t max_line) {
        *f = (struct framer){ .max_line = max_line, .keep = FRAMER_KEEP_BYTES };
}

void framer_done(struct framer *f) {
        size_t keep = f->keep;

        loan_put(f->lent);
        f->lent = NULL;
        if (f->home) {
                f->home->framer = NULL; /* loans still out unmap their buffers themselves */
                home_put(f->home);
        }
        spare_free(f);
        buffer_free(f->buf, f->cap);
        framer_init(f, f->max_line);
        f->keep = keep;
}

void framer_keep(struct framer *f, size_t bytes) {
        f->keep = bytes;
}

static bool empty_and_large(const struct framer *f) {
        return f->cap > FRAMER_KEEP_BYTES && f->start == f->len;
}

bool framer_spare(const struct framer *f) {
        return empty_and_large(f) || f->spare || (f->home && f->home->refs > 1);
}

void framer_trim(struct framer *f) {
        spare_free(f);
        if (!empty_and_large(f))
                return;
        buffer_free(f->buf, f->cap);
        f->buf = NULL;
        f->start = f->len = f->cap = f->scanned = 0;
}

size_t framer_buffered(const struct framer *f) {
        return f->len - f->start - f->held;
}

static void forget(struct framer *f, size_t bytes) {
        f->start += bytes;
        f->scanned = 0;
        if (f->start < f->len)
                return;
        f->start = f->len = 0;
        if (f->cap > f->keep) {
                buffer_free(f->buf, f->cap);
                f->buf = NULL;
                f->cap = 0;
        }
}

/* Drops the over-long line reported last, which the caller has had its look at. */
static void release(struct framer *f) {
        size_t held = f->held;

        if (held == 0)
                return;
        f->held = 0;
        forget(f, held);
}

/* Makes room for n more bytes at the end; what is left of earlier input (an unfinished
 * line) moves to the front first. */
static int reserve(struct framer *f, size_t n) {
        size_t need, cap;
        char *b;

        if (f->start > 0) {
                memmove(f->buf, f->buf + f->start, f->len - f->start);
                f->len -= f->start;
                f->start = 0;
        }
        need = f->len + n;
        if (need <= f->cap)
                return 0;
        cap = f->cap * 2 > need ? f->cap * 2 : need;
        if (cap < FRAMER_MIN_BYTES)
                cap = FRAMER_MIN_BYTES;
        if (is_mapped(cap))
                cap = mapped_size(cap);
        if (is_mapped(cap) && !is_mapped(f->cap) && (b = take_spare(f, &cap))) {
                /* a lent buffer come back: its pages are there already */
                if (f->len > 0)
                        memcpy(b, f->buf, f->len);
                free(f->buf);
        } else {
                b = buffer_resize(f->buf, f->cap, f->len, cap);
        }
        if (!b)
                return -ENOMEM;
        f->buf = b;
        f->cap = cap;
        return 0;
}

/* The end of an over-long line in bytes just taken in, from offset from: keeps what
 * follows it. Our buffer holds nothing else meanwhile: the line's start was dropped when it
 * was found too long. */
static void discard_read(struct framer *f, size_t from) {
        const char *nl = memchr(f->buf + from, '\n', f->len - from);

        if (!nl) {
                f->len = from;
                return;
        }
        f->discarding = false;
        f->start = from;
        forget(f, (size_t)(nl - (f->buf + from)) + 1);
}

/* Moves what in holds to the end of our buffer, as framer_read() does with a read. */
static int take_input(struct framer *f, struct evbuffer *in) {
        size_t n = in ? evbuffer_get_length(in) : 0, from;

        if (n == 0)
                return 0;
        if (reserve(f, n) < 0)
                return -ENOMEM;
        from = f->len;
        evbuffer_remove(in, f->buf + from, n);
        f->len += n;
        if (f->discarding)
                discard_read(f, from);
        return 0;
}

int framer_add(struct framer *f, const void *data, size_t n) {
        size_t from;

        release(f);
        if (n == 0)
                return 0;
        if (reserve(f, n) < 0)
                return -ENOMEM;
        from = f->len;
        memcpy(f->buf + from, data, n);
        f->len += n;
        if (f->discarding)
                discard_read(f, from);
        return 0;
}

ssize_t framer_read(struct framer *f, int fd) {
        /* Reads grow with the unfinished line, so a large message takes few reads; the
         * buffer doubles, so it is not regrown for each. */
        size_t want, from;
        ssize_t n;

        release(f);
        want = framer_buffered(f);
        want = want < FRAMER_READ_BYTES ? FRAMER_READ_BYTES : want > FRAMER_MAX_READ_BYTES ? FRAMER_MAX_READ_BYTES : want;
        if (reserve(f, want) < 0)
                return -ENOMEM;
        from = f->len;
        n = read(fd, f->buf + from, f->cap - from);
        if (n < 0)
                return -errno;
        f->len += (size_t)n;
        if (f->discarding && n > 0)
                discard_read(f, from);
        return n;
}

static enum frame_kind make_line(struct framer *f, size_t len, size_t consume, struct frame *ret) {
        const char *data = f->buf + f->start;

        if (len > 0 && data[len - 1] == '\r')
                len--;
        *ret = (struct frame){ .kind = FRAME_LINE, .data = data, .len = len, .consume = consume };
        return FRAME_LINE;
}

/* The line's bytes are kept until the next call, so the caller can read its head. */
static enum frame_kind oversize(struct framer *f, size_t len, size_t drop, bool discard_rest, struct frame *ret) {
        f->held = drop;
        f->discarding = discard_rest;
        *ret = (struct frame){ .kind = FRAME_OVERSIZE, .data = f->buf + f->start, .len = len, .consume = drop };
        return FRAME_OVERSIZE;
}

enum frame_kind framer_next(struct framer *f, struct evbuffer *in, bool at_eof, struct frame *ret) {
        for (;;) {
                size_t avail;
                const char *nl;

                *ret = (struct frame){ .kind = FRAME_NONE };
                release(f);
                if (take_input(f, in) < 0) /* out of memory: lose this line, keep the stream */
                        return oversize(f, framer_buffered(f), framer_buffered(f), !at_eof, ret);
                if (f->discarding && at_eof)
                        f->discarding = false; /* the over-long line ended with the stream */
                if (f->discarding)
                        return FRAME_NONE;
                avail = framer_buffered(f);
                nl = avail > f->scanned ? memchr(f->buf + f->start + f->scanned, '\n', avail - f->scanned) : NULL;
                if (!nl) {
                        f->scanned = avail;
                        if (avail > f->max_line)
                                /* Report now, not when the newline finally comes: the peer
                                 * hears about it at once and we stop buffering. */
                                return oversize(f, avail, avail, !at_eof, ret);
                        if (!at_eof || avail == 0)
                                return FRAME_NONE;
                        make_line(f, avail, avail, ret);
                } else {
                        size_t len = (size_t)(nl - (f->buf + f->start));

                        if (len > f->max_line)
                                return oversize(f, len, len + 1, false, ret);
                        make_line(f, len, len + 1, ret);
                }
                if (ret->len > 0)
                        return FRAME_LINE;
                forget(f, ret->consume); /* blank line: nothing to answer */
        }
}

void framer_consume(struct framer *f, const struct frame *fr) {
        if (f->lent) {
                /* Its bytes went with the buffer: what followed them is ours already. */
                loan_put(f->lent);
                f->lent = NULL;
        } else if (fr->kind == FRAME_LINE)
                forget(f, fr->consume);
        else if (fr->kind == FRAME_OVERSIZE)
                release(f);
}

/* A buffer lent: the mapping's pages that hold the line. */
struct framer_loan {
        struct loan loan;              /* first */
        struct framer_home *home;
        char *map;
        size_t map_len;
};

/* Back to the framer as its spare when it lives and has none (a larger one stays). */
static void framer_loan_free(struct loan *l) {
        struct framer_loan *fl = (struct framer_loan *)l;
        struct framer *f = fl->home->framer;

        if (f && fl->map_len > f->spare_cap) {
                spare_free(f);
                f->spare = fl->map;
                f->spare_cap = fl->map_len;
        } else {
                munmap(fl->map, fl->map_len);
        }
        home_put(fl->home);
        free(fl);
}

/* Gives back the pages of a mapping of cap bytes outside [from, to); ret: what is left. */
static void keep_pages(struct framer_loan *fl, char *buf, size_t cap, size_t from, size_t to) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE), lo = from / page * page, hi = (to + page - 1) / page * page;

        if (hi > cap)
                hi = cap;
        if (lo > 0)
                munmap(buf, lo);
        if (hi < cap)
                munmap(buf + hi, cap - hi);
        fl->map = buf + lo;
        fl->map_len = hi - lo;
}

struct loan *framer_lend(struct framer *f, const struct frame *fr) {
        struct framer saved;
        char *old = f->buf;
        size_t old_cap = f->cap, from = f->start, to = f->start + fr->consume, rest;
        struct framer_loan *fl;

        if (f->lent)
                return loan_hold(f->lent);
        if (fr->kind != FRAME_LINE || !is_mapped(f->cap) || fr->data != f->buf + f->start || to > f->len)
                return NULL;
        if (!f->home) {
                f->home = calloc(1, sizeof *f->home);
                if (!f->home)
                        return NULL;
                *f->home = (struct framer_home){ .refs = 1, .framer = f };
        }
        fl = calloc(1, sizeof *fl);
        if (!fl)
                return NULL;
        saved = *f;
        rest = f->len - to;
        f->buf = NULL;
        f->start = f->len = f->cap = f->scanned = 0;
        if (rest > 0 && reserve(f, rest) < 0) {
                *f = saved;
                free(fl);
                return NULL;
        }
        if (rest > 0)
                memcpy(f->buf, old + to, rest);
        f->len = rest;
        keep_pages(fl, old, old_cap, from, to);
        fl->loan = (struct loan){ .refs = 2, .free = framer_loan_free }; /* the caller's, and ours till consumed */
        fl->home = f->home;
        f->home->refs++;
        f->lent = &fl->loan;
        return &fl->loan;
}

static struct loan *take_offered(const struct loan_offer *o) {
        const struct framer_offer *fo = (const struct framer_offer *)o;

        return framer_lend(fo->framer, fo->frame);
}

void framer_offer(struct framer *f, const struct frame *fr, struct framer_offer *ret) {
        *ret = (struct framer_offer){ .offer = { .data = fr->data, .len = fr->len, .take = take_offered },
                                      .framer = f, .frame = fr };
}
