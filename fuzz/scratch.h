/* Scratch directories of the harnesses: /tmp/PREFIX.PID.XXXXXX, one per process. A fuzzer
 * that finds a crash aborts without running atexit(), so each new process first removes
 * the directories of processes that are gone. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline int scratch_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static inline void scratch_remove(const char *path) {
        nftw(path, scratch_remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static inline void scratch_remove_stale(const char *prefix) {
        size_t len = strlen(prefix);
        DIR *dir = opendir("/tmp");
        struct dirent *e;

        if (!dir)
                return;
        while ((e = readdir(dir))) {
                char path[300];
                long pid;

                if (strncmp(e->d_name, prefix, len) != 0 || e->d_name[len] != '.')
                        continue;
                pid = strtol(e->d_name + len + 1, NULL, 10);
                if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH)) {
                        snprintf(path, sizeof path, "/tmp/%s", e->d_name);
                        scratch_remove(path);
                }
        }
        closedir(dir);
}

/* Makes this process's directory into buf; false (errno set) on failure. */
static inline bool scratch_make(const char *prefix, char *buf, size_t size) {
        scratch_remove_stale(prefix);
        snprintf(buf, size, "/tmp/%s.%d.XXXXXX", prefix, (int)getpid());
        return mkdtemp(buf) != NULL;
}
