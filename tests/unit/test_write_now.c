/* Unit tests for write-now.c: a message goes out at once when nothing is queued before it;
 * otherwise, and for what the descriptor does not take, it is queued in order. */
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "unit-helpers.h"
#include "loan.h"
#include "write-now.h"

static struct bufferevent *bev;
static int peer = -1;

static void setup(void) {
        int sv[2];

        signal(SIGPIPE, SIG_IGN); /* as main.c does */
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        bev = bufferevent_socket_new(loop_start(), sv[0], BEV_OPT_CLOSE_ON_FREE);
        cr_assert_not_null(bev);
        bufferevent_enable(bev, EV_WRITE);
        peer = sv[1];
}

static void teardown(void) {
        bufferevent_free(bev);
        if (peer >= 0)
                close(peer);
        loop_stop();
}

TestSuite(write_now, .init = setup, .fini = teardown);

static size_t queued(void) {
        return evbuffer_get_length(bufferevent_get_output(bev));
}

/* Reads what the peer has now, without running the loop. */
static size_t peer_reads(char *buf, size_t size) {
        ssize_t n = read(peer, buf, size);

        return n > 0 ? (size_t)n : 0;
}

static void send_text(const char *a, const char *b) {
        struct iovec parts[2] = { { (void *)a, strlen(a) }, { (void *)b, strlen(b) } };

        cr_assert_eq(write_now(bev, parts, 2, NULL), 0);
}

Test(write_now, written_before_the_loop_runs) {
        char buf[64] = "";

        send_text("{\"a\":1}", "\n");
        cr_assert_eq(queued(), 0, "queued although the socket had room");
        cr_assert_eq(peer_reads(buf, sizeof buf - 1), 8);
        cr_assert_str_eq(buf, "{\"a\":1}\n");
}

Test(write_now, after_what_is_queued_in_order) {
        char buf[64] = "";

        cr_assert_eq(bufferevent_write(bev, "first\n", 6), 0);
        send_text("second", "\n");
        cr_assert_eq(queued(), 13, "written past what was queued before it");
        WAIT_UNTIL(queued() == 0);
        cr_assert_eq(peer_reads(buf, sizeof buf - 1), 13);
        cr_assert_str_eq(buf, "first\nsecond\n");
}

/* A message larger than the socket takes: the rest is queued, and the whole arrives in
 * order with what follows. */
Test(write_now, the_rest_queued_when_the_socket_is_full) {
        const size_t size = 4 << 20;
        char *big = malloc(size + 1), *got = malloc(size + 64);
        size_t have = 0;

        for (size_t i = 0; i < size; i++)
                big[i] = (char)('a' + i % 26);
        big[size] = '\0';
        send_text(big, "\n");
        cr_assert_gt(queued(), 0, "4 MiB went into the socket at once");
        cr_assert_lt(queued(), size + 1, "nothing was written at once");
        send_text("after", "\n");
        while (have < size + 7) {
                loop_once();
                have += peer_reads(got + have, size + 64 - have);
        }
        cr_assert_eq(have, size + 7);
        cr_assert(memcmp(got, big, size) == 0 && memcmp(got + size, "\nafter\n", 7) == 0, "bytes out of order");
        free(big);
        free(got);
}

/* A peer gone: nothing is written now, the message is queued, and the bufferevent meets
 * the error when it writes, as it always did. */
Test(write_now, a_closed_peer_leaves_it_to_the_bufferevent) {
        close(peer);
        peer = -1;
        send_text("lost", "\n");
        cr_assert_eq(queued(), 5);
}

/* Out of memory after part of a message went out is reported: the peer then holds part
 * of a line. */
static void setup_failing_allocator(void) {
        failing_allocator_install();
        setup();
}

Test(write_now, out_of_memory_after_a_partial_write_reported, .init = setup_failing_allocator) {
        const size_t size = 4 << 20;
        char *big = malloc(size + 1), buf[4096];
        struct iovec parts[1] = { { big, size } };

        memset(big, 'a', size);
        failing_allocations(true);
        cr_assert_eq(write_now(bev, parts, 1, NULL), -ENOMEM);
        failing_allocations(false);
        cr_assert_gt(peer_reads(buf, sizeof buf), 0, "nothing went out: not the case this tests");
        free(big);
}

/* ---- bytes lent (loan.h) ---- */

struct test_loan {
        struct loan loan;
        char *bytes;
        bool freed;
};

static void test_loan_free(struct loan *l) {
        ((struct test_loan *)l)->freed = true;
}

static struct test_loan lender;

static struct loan *take_test_loan(const struct loan_offer *o) {
        return loan_hold(&lender.loan);
}

/* A large part the caller's offer holds is queued where it is, with a reference that goes
 * once it is written; what is not offered, and a small part, are copied. */
Test(write_now, a_large_offered_part_queued_by_reference) {
        const size_t size = 4 << 20;
        char *got = malloc(size + 64), head[] = "{\"r\":", tail[] = "}\n";
        size_t have = 0;

        lender = (struct test_loan){ .loan = { .refs = 1, .free = test_loan_free }, .bytes = malloc(size) };
        for (size_t i = 0; i < size; i++)
                lender.bytes[i] = (char)('a' + i % 26);
        struct loan_offer offer = { .data = lender.bytes, .len = size, .take = take_test_loan };
        struct iovec parts[3] = { { head, 5 }, { lender.bytes, size }, { tail, 2 } };

        cr_assert_eq(write_now(bev, parts, 3, &offer), 0);
        cr_assert_gt(queued(), 0, "4 MiB went into the socket at once");
        cr_assert_eq(lender.loan.refs, 2, "the queued bytes hold no reference: they were copied");
        memcpy(tail, "XX", 2); /* the caller's own bytes are its again */
        loan_put(&lender.loan);
        cr_assert(!lender.freed, "freed while queued");
        while (have < size + 7) {
                loop_once();
                have += peer_reads(got + have, size + 64 - have);
        }
        cr_assert_eq(have, size + 7);
        cr_assert(memcmp(got, "{\"r\":", 5) == 0 && memcmp(got + 5, lender.bytes, size) == 0 &&
                  memcmp(got + 5 + size, "}\n", 2) == 0, "bytes changed on the way");
        WAIT_UNTIL(queued() == 0);
        cr_assert(lender.freed, "the reference outlived the write");
        free(lender.bytes);
        free(got);
}

/* Bytes the offer does not hold are copied even when large. */
Test(write_now, bytes_outside_the_offer_copied) {
        const size_t size = 1 << 20;
        char *mine = malloc(size);

        lender = (struct test_loan){ .loan = { .refs = 1, .free = test_loan_free }, .bytes = malloc(size) };
        memset(mine, 'm', size);
        struct loan_offer offer = { .data = lender.bytes, .len = size, .take = take_test_loan };
        struct iovec parts[1] = { { mine, size } };

        cr_assert_eq(write_now(bev, parts, 1, &offer), 0);
        cr_assert_gt(queued(), 0);
        cr_assert_eq(lender.loan.refs, 1, "a loan taken of bytes it does not hold");
        free(mine);
        free(lender.bytes);
}
