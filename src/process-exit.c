/* How a server process ended, in the words of logs, errors and status rows; see process.h.
 * A file of its own, apart from spawning and signalling, so the fuzz harness's fake
 * processes (fuzz/fake-process.c) use these same words. */
#include "process.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

const char *process_describe_exit(const struct process *p, char *buf, size_t size) {
        const char *name = sigabbrev_np(p->status);

        if (!p->reaped)
                snprintf(buf, size, "running");
        else if (p->code == CLD_EXITED)
                snprintf(buf, size, "exit status %d", p->status);
        else if (p->code == CLD_DUMPED)
                snprintf(buf, size, "dumped core on SIG%s", name ? name : "?");
        else
                snprintf(buf, size, "killed by SIG%s", name ? name : "?");
        return buf;
}

bool process_exited_cleanly(const struct process *p) {
        return p->reaped && p->code == CLD_EXITED && p->status == 0;
}
