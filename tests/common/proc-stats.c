/* What /proc says of a process; see proc-stats.h. */
#include "proc-stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_text(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return (int)n;
}

bool proc_stat(pid_t pid, struct proc_stat *ret) {
        char path[64], buf[1024], *open_paren, *close_paren;
        unsigned long long user, sys;
        int ppid, pgid;

        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        if (read_text(path, buf, sizeof buf) <= 0)
                return false;
        /* The name (field 2) may hold spaces and ')': the fields after it follow the last ')'. */
        open_paren = strchr(buf, '(');
        close_paren = strrchr(buf, ')');
        if (!open_paren || !close_paren || close_paren < open_paren ||
            sscanf(close_paren + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ret->state, &ppid, &pgid,
                   &user, &sys) != 5)
                return false;
        ret->ppid = ppid;
        ret->pgid = pgid;
        ret->utime = (int64_t)user;
        ret->stime = (int64_t)sys;
        snprintf(ret->comm, sizeof ret->comm, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
        return true;
}

int proc_fd_count(pid_t pid) {
        char path[64];
        struct dirent *e;
        int n = 0;
        DIR *dir;

        snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
        dir = opendir(path);
        if (!dir)
                return -errno;
        while ((e = readdir(dir)))
                n += e->d_name[0] != '.';
        closedir(dir);
        return n;
}

long proc_rss_kib(pid_t pid) {
        char path[64], buf[4096], *p;

        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
        if (read_text(path, buf, sizeof buf) < 0 || !(p = strstr(buf, "\nVmRSS:")))
                return -1;
        return strtol(p + 7, NULL, 10);
}

int64_t proc_cpu_ticks(pid_t pid) {
        struct proc_stat st;

        return proc_stat(pid, &st) ? st.utime + st.stime : -1;
}

long long proc_cpu_ms(pid_t pid) {
        int64_t ticks = proc_cpu_ticks(pid);

        return ticks < 0 ? -1 : (long long)(ticks * 1000 / sysconf(_SC_CLK_TCK));
}

pid_t proc_first_child(pid_t pid) {
        char path[64], buf[256];

        snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
        if (read_text(path, buf, sizeof buf) <= 0)
                return 0;
        return (pid_t)strtol(buf, NULL, 10);
}

int proc_count(bool (*match)(pid_t pid, void *arg), void *arg) {
        DIR *dir = opendir("/proc");
        struct dirent *e;
        int count = 0;
        pid_t pid;

        if (!dir)
                return -1;
        while ((e = readdir(dir)))
                if ((pid = (pid_t)atoi(e->d_name)) > 0 && match(pid, arg))
                        count++;
        closedir(dir);
        return count;
}
