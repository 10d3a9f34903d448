/* For profiling only: lets mcpvisord run under valgrind 3.19 (Debian 12), which does not
 * know the pidfd_open and pidfd_send_signal system calls, so that callgrind can profile
 * the daemon with a server behind it. Never used in production, never in a test.
 *
 *   LD_PRELOAD=.../libmcpvisor-bench-pidfd-shim.so valgrind --tool=callgrind mcpvisord ...
 *   (mcpvisor-bench --daemon-prefix "env LD_PRELOAD=... valgrind --tool=callgrind ...")
 *
 * A "pidfd" here is an eventfd that a thread makes readable once the process has exited;
 * the thread waits with WNOWAIT, so the daemon still reaps the process itself, through
 * waitid(P_PIDFD), which becomes waitid(P_PID) for the pid behind the eventfd. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WATCHED 256

struct watched {
        int fd;
        pid_t pid;
};

static struct watched table[MAX_WATCHED];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static pid_t pid_of(int fd) {
        pid_t pid = 0;

        pthread_mutex_lock(&table_lock);
        for (int i = 0; i < MAX_WATCHED; i++)
                if (table[i].pid > 0 && table[i].fd == fd)
                        pid = table[i].pid;
        pthread_mutex_unlock(&table_lock);
        return pid;
}

static void remember(int fd, pid_t pid) {
        pthread_mutex_lock(&table_lock);
        for (int i = 0; i < MAX_WATCHED; i++)
                if (table[i].pid == 0 || table[i].fd == fd) {
                        table[i] = (struct watched){ fd, pid };
                        break;
                }
        pthread_mutex_unlock(&table_lock);
}

static void *watch_exit(void *arg) {
        struct watched w = *(struct watched *)arg;
        siginfo_t si;
        uint64_t one = 1;

        free(arg);
        while (waitid(P_PID, (id_t)w.pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
                ;
        (void)write(w.fd, &one, sizeof one);
        return NULL;
}

int pidfd_open(pid_t pid, unsigned int flags) {
        struct watched *w = malloc(sizeof *w);
        pthread_t thread;
        int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

        if (fd < 0 || !w) {
                free(w);
                return -1;
        }
        *w = (struct watched){ fd, pid };
        remember(fd, pid);
        if (pthread_create(&thread, NULL, watch_exit, w) != 0) {
                free(w);
                close(fd);
                errno = EAGAIN;
                return -1;
        }
        pthread_detach(thread);
        return fd;
}

int pidfd_send_signal(int fd, int sig, siginfo_t *info, unsigned int flags) {
        pid_t pid = pid_of(fd);

        if (pid <= 0) {
                errno = EBADF;
                return -1;
        }
        return kill(pid, sig);
}

int waitid(idtype_t type, id_t id, siginfo_t *info, int options) {
        static int (*real)(idtype_t, id_t, siginfo_t *, int);

        if (!real)
                real = (int (*)(idtype_t, id_t, siginfo_t *, int))dlsym(RTLD_NEXT, "waitid");
        if (type == P_PIDFD) {
                pid_t pid = pid_of((int)id);
                if (pid <= 0) {
                        errno = EBADF;
                        return -1;
                }
                return real(P_PID, (id_t)pid, info, options);
        }
        return real(type, id, info, options);
}
