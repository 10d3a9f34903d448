/* A snapshot of the process tree from /proc; see proc-tree.h. */
#include "proc-tree.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

/* The command name (field 2) may hold spaces and ')': the fields after it start after
 * the last ')'. */
int proc_stat_read(pid_t pid, struct proc_entry *ret) {
        char path[64], buf[1024];
        _cleanup_close_ int fd = -1;
        unsigned long long start;
        ssize_t n;
        char *p, state;
        int ppid;

        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -ESRCH;
        n = read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return -ESRCH;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                         &state, &ppid, &start) != 3 || state == 'Z' || state == 'X')
                return -ESRCH;
        *ret = (struct proc_entry){ .pid = pid, .ppid = ppid, .start = start };
        return 0;
}

static int by_pid(const void *a, const void *b) {
        const struct proc_entry *x = a, *y = b;

        return (x->pid > y->pid) - (x->pid < y->pid);
}

int proc_tree_reader_open(struct proc_tree_reader *rd, size_t max) {
        _cleanup_(closedirp) DIR *dir = opendir("/proc");
        size_t size = 0;
        struct dirent *de;

        *rd = (struct proc_tree_reader){ 0 };
        if (!dir)
                return -errno;
        /* The pids at once, so that the directory is not held open between steps. */
        while ((de = readdir(dir)) && rd->n_pids < max) {
                if (!isdigit((unsigned char)de->d_name[0]))
                        continue;
                if (rd->n_pids == size) {
                        size_t bigger = size ? size * 2 : 256;
                        pid_t *grown = reallocarray(rd->pids, bigger, sizeof *grown);

                        if (!grown) {
                                proc_tree_reader_done(rd);
                                return -ENOMEM;
                        }
                        rd->pids = grown;
                        size = bigger;
                }
                rd->pids[rd->n_pids++] = (pid_t)atoi(de->d_name);
        }
        rd->tree.procs = calloc(rd->n_pids + 1, sizeof *rd->tree.procs);
        if (!rd->tree.procs) {
                proc_tree_reader_done(rd);
                return -ENOMEM;
        }
        return 0;
}

int proc_tree_reader_step(struct proc_tree_reader *rd, size_t count) {
        struct proc_tree *t = &rd->tree;

        for (size_t read = 0; read < count && rd->next < rd->n_pids; read++)
                if (proc_stat_read(rd->pids[rd->next++], &t->procs[t->n]) == 0)
                        t->n++;
        if (rd->next < rd->n_pids)
                return 0;
        if (!rd->sorted)
                qsort(t->procs, t->n, sizeof *t->procs, by_pid);
        rd->sorted = true;
        return 1;
}

void proc_tree_reader_done(struct proc_tree_reader *rd) {
        free(rd->pids);
        proc_tree_done(&rd->tree);
        *rd = (struct proc_tree_reader){ 0 };
}

int proc_tree_read(struct proc_tree *t, size_t max) {
        struct proc_tree_reader rd;
        int r = proc_tree_reader_open(&rd, max);

        *t = (struct proc_tree){ 0 };
        if (r < 0)
                return r;
        (void)proc_tree_reader_step(&rd, SIZE_MAX);
        *t = rd.tree;
        free(rd.pids);
        return 0;
}

const struct proc_entry *proc_tree_find(const struct proc_tree *t, pid_t pid) {
        struct proc_entry key = { .pid = pid };

        return t->n ? bsearch(&key, t->procs, t->n, sizeof *t->procs, by_pid) : NULL;
}

const struct proc_entry *proc_tree_below(const struct proc_tree *t, const struct proc_entry *e, pid_t top,
                                         unsigned max_depth) {
        for (unsigned depth = 0; e && depth < max_depth; depth++) {
                if (e->ppid == top)
                        return e;
                if (e->ppid <= 1)
                        return NULL;
                e = proc_tree_find(t, e->ppid);
        }
        return NULL;
}

void proc_tree_done(struct proc_tree *t) {
        free(t->procs);
        *t = (struct proc_tree){ 0 };
}
