/* Fuzz target "http_head": a request head as a peer sends it, through the HTTP gate's reader
 * and decision (http-gate.c), which see it before evhttp does and alone decide whether a
 * body may follow it.
 *
 * Input: [1 byte: bit 0, a Unix socket's peer] [the head, without its blank line]
 *
 * Invariants:
 *   - what the reader points at lies inside the text it was given, NUL-terminated there;
 *   - a well-formed head has a method and a target, and a Content-Length body of at least
 *     one byte; a malformed one is never admitted;
 *   - a head admitted on TCP is admitted from a Unix socket too (a Unix peer needs no
 *     token), and one admitted on TCP carries the token;
 *   - reading is deterministic: a second copy reads the same. */
#include <string.h>

#include "fuzz-input.h"
#include "http-config.h"
#include "http-gate.h"

#define SECRET "fuzz-token-0123456789"

static struct http_token token = { .secret = SECRET, .secret_len = sizeof SECRET - 1, .user = "fuzz" };
static struct http_config config = { .tokens = &token, .n_tokens = 1 };

static bool inside(const char *p, const char *buf, size_t len) {
        return !p || (p >= buf && p <= buf + len && memchr(p, '\0', (size_t)(buf + len + 1 - p)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fuzz_input in = { data, size };
        bool unix_peer = take_u8(&in) & 1;
        size_t len = in.size > HTTP_GATE_MAX_HEAD ? HTTP_GATE_MAX_HEAD : in.size;
        char *a = malloc(len + 1), *b = malloc(len + 1);
        struct http_head h, h2;
        bool tcp, local;

        fuzz_check(a && b, "out of memory");
        memcpy(a, in.data, len);
        memcpy(b, in.data, len);
        http_head_parse(a, len, &h);
        http_head_parse(b, len, &h2);
        fuzz_check(inside(h.method, a, len) && inside(h.target, a, len) && inside(h.authorization, a, len) &&
                           inside(h.origin, a, len),
                   "a pointer outside the head");
        fuzz_check(h.malformed == h2.malformed && h.body == h2.body && h.length == h2.length, "two readings differ");
        if (!h.malformed) {
                fuzz_check(h.method && h.method[0] && h.target && h.target[0], "well formed without a request line");
                fuzz_check(h.body != HTTP_HEAD_LENGTH || h.length > 0, "a body of no bytes");
        }
        tcp = http_head_admits(&config, NULL, &h, false);
        local = http_head_admits(&config, NULL, &h, unix_peer);
        fuzz_check(!(tcp || local) || !h.malformed, "a malformed head admitted");
        fuzz_check(!tcp || http_head_admits(&config, NULL, &h, true), "admitted on TCP but not from a Unix peer");
        fuzz_check(!tcp || (h.authorization && strstr(h.authorization, SECRET)), "admitted on TCP without the token");
        free(a);
        free(b);
        return 0;
}
