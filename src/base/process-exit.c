/* How a server process ended, in the words of logs, errors and status rows; see process.h.
 * A file of its own, apart from spawning and signalling, so the fuzz harness's fake
 * processes (fuzz/fake-process.c) use these same words. */
#include "process.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

const char *process_describe_exit(int code, int status, char *buf, size_t size) {
        const char *name = sigabbrev_np(status);

        if (code == CLD_EXITED)
                snprintf(buf, size, "exit status %d", status);
        else if (code == CLD_DUMPED)
                snprintf(buf, size, "dumped core on SIG%s", name ? name : "?");
        else
                snprintf(buf, size, "killed by SIG%s", name ? name : "?");
        return buf;
}
