/* The daemon under soak: its two configs, its start and stop, its control socket, and what
 * /proc says about it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc-stats.h"
#include "soak.h"

/* Two configs, A (the start and the end) and B, that the reloads alternate between: alpha
 * and solo stay, beta changes (so it restarts), gamma is removed and delta added. Every
 * server restarts fast and without a start limit, since the run kills them on purpose. */
const char *const soak_servers[] = { "alpha", "beta", "gamma", "delta", SOAK_SOLO, NULL };

static const char *const config_a[] = { "alpha", "beta", "gamma", SOAK_SOLO, NULL };
static const char *const config_b[] = { "alpha", "beta", "delta", SOAK_SOLO, NULL };

bool soak_config_has(unsigned v, const char *name) {
        for (const char *const *n = v ? config_b : config_a; *n; n++)
                if (strcmp(*n, name) == 0)
                        return true;
        return false;
}

static void add_args(json_object *entry, const char *const *args) {
        json_object *a = json_object_new_array();

        for (; *args; args++)
                json_object_array_add(a, json_object_new_string(*args));
        json_object_object_add(entry, "args", a);
}

static json_object *server_entry(struct soak *s, const char *const *args) {
        json_object *e = json_object_new_object();

        json_object_object_add(e, "command", json_object_new_string(s->opt.server_path));
        add_args(e, args);
        json_object_object_add(e, "restartDelay", json_object_new_double(0.2));
        json_object_object_add(e, "restartDelayMax", json_object_new_double(1));
        json_object_object_add(e, "startLimitBurst", json_object_new_int(0));
        json_object_object_add(e, "healthInterval", json_object_new_double(2));
        json_object_object_add(e, "stopTimeout", json_object_new_double(1));
        json_object_object_add(e, "killTimeout", json_object_new_double(1));
        return e;
}

static json_object *config_json(struct soak *s, unsigned v) {
        static const char *const alpha[] = { NULL };
        static const char *const beta_a[] = { "--tools", "40", "--page-size", "16", NULL };
        static const char *const beta_b[] = { "--tools", "48", "--page-size", "16", NULL };
        static const char *const gamma[] = { "--subscribe", "--resources", "4", NULL };
        static const char *const delta[] = { "--prompts", "6", "--list-changed-after-ms", "300", NULL };
        json_object *root = json_object_new_object(), *daemon = json_object_new_object(),
                    *servers = json_object_new_object(), *g;

        json_object_object_add(daemon, "logLevel", json_object_new_string("info"));
        json_object_object_add(root, "mcpvisor", daemon);
        json_object_object_add(servers, "alpha", server_entry(s, alpha));
        json_object_object_add(servers, SOAK_SOLO, server_entry(s, alpha));
        json_object_object_add(servers, "beta", server_entry(s, v ? beta_b : beta_a));
        if (v) {
                json_object_object_add(servers, "delta", server_entry(s, delta));
        } else {
                /* Its sleeps past 1.5 s end in requestTimeout's error. */
                g = server_entry(s, gamma);
                json_object_object_add(g, "requestTimeout", json_object_new_double(1.5));
                json_object_object_add(servers, "gamma", g);
        }
        json_object_object_add(root, "mcpServers", servers);
        return root;
}

/* Through a rename, so the daemon never reads half a file. */
static int write_config(struct soak *s, unsigned v) {
        char tmp[sizeof s->d.config + 8];
        json_object *cfg = config_json(s, v);
        int r;

        snprintf(tmp, sizeof tmp, "%s.tmp", s->d.config);
        r = json_object_to_file_ext(tmp, cfg, JSON_C_TO_STRING_PRETTY);
        json_object_put(cfg);
        if (r < 0 || rename(tmp, s->d.config) < 0)
                return -EIO;
        return 0;
}

int soak_daemon_start(struct soak *s) {
        char path_env[1024], home_env[512];
        const char *argv[] = { s->opt.daemon_path, "--socket", s->d.sock, "--control-socket", s->d.control,
                               "--config", s->d.config, "--log-level", s->opt.log_level, NULL };
        const char *envp[3] = { path_env, NULL, NULL };
        posix_spawn_file_actions_t fa;
        int r;

        strcpy(s->d.dir, "/tmp/mcpvisor-soak-XXXXXX");
        if (!mkdtemp(s->d.dir))
                return -errno;
        snprintf(s->d.config, sizeof s->d.config, "%s/mcpvisor.json", s->d.dir);
        snprintf(s->d.sock, sizeof s->d.sock, "%s/mcp.sock", s->d.dir);
        snprintf(s->d.control, sizeof s->d.control, "%s/control.sock", s->d.dir);
        snprintf(s->d.log, sizeof s->d.log, "%s/daemon.log", s->d.dir);
        if (strlen(s->d.control) >= sizeof ((struct sockaddr_un *)NULL)->sun_path)
                return -ENAMETOOLONG;
        r = write_config(s, 0);
        if (r < 0)
                return r;
        s->variant = 0;

        /* A clean environment, as systemd would give: under ASan that also means the default
         * leak check at exit, whatever the soak itself runs with. */
        snprintf(path_env, sizeof path_env, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        if (getenv("HOME")) {
                snprintf(home_env, sizeof home_env, "HOME=%s", getenv("HOME"));
                envp[1] = home_env;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, s->d.log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        r = posix_spawn(&s->d.pid, argv[0], &fa, NULL, (char **)argv, (char **)envp);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                return -r;
        s->d.pidfd = pidfd_open(s->d.pid, 0);
        return s->d.pidfd < 0 ? -errno : 0;
}

int soak_daemon_reload(struct soak *s, unsigned v) {
        int r = write_config(s, v);

        if (r < 0)
                return r;
        s->variant = v;
        return kill(s->d.pid, SIGHUP) < 0 ? -errno : 0;
}

static int remaining(uint64_t deadline) {
        uint64_t now = soak_now_ms();

        return now >= deadline ? 0 : (int)(deadline - now);
}

static int connect_control(struct soak *s) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        memcpy(sa.sun_path, s->d.control, strlen(s->d.control) + 1); /* fits: soak_daemon_start checked */
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* One line of answer, read with a deadline. */
static char *read_line(int fd, uint64_t deadline) {
        size_t len = 0, cap = 4096;
        char *buf = malloc(cap);

        while (buf) {
                struct pollfd p = { fd, POLLIN, 0 };
                char *nl = memchr(buf, '\n', len);
                ssize_t n;

                if (nl) {
                        *nl = '\0';
                        return buf;
                }
                if (poll(&p, 1, remaining(deadline)) <= 0)
                        break;
                if (cap - len < 1024) {
                        char *bigger = realloc(buf, cap * 2);
                        if (!bigger)
                                break;
                        buf = bigger;
                        cap *= 2;
                }
                n = read(fd, buf + len, cap - len - 1);
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        free(buf);
        return NULL;
}

json_object *soak_daemon_status(struct soak *s, int timeout_ms) {
        static const char request[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}\n";
        uint64_t deadline = soak_now_ms() + (uint64_t)timeout_ms;
        json_object *answer = NULL, *result;
        char *line;
        int fd = connect_control(s);

        if (fd < 0)
                return NULL;
        if (write(fd, request, sizeof request - 1) != (ssize_t)(sizeof request - 1)) {
                close(fd);
                return NULL;
        }
        line = read_line(fd, deadline);
        close(fd);
        if (line)
                answer = json_tokener_parse(line);
        free(line);
        if (!answer || !json_object_object_get_ex(answer, "result", &result)) {
                json_object_put(answer);
                return NULL;
        }
        json_object_get(result);
        json_object_put(answer);
        return result;
}

static json_object *member(json_object *o, const char *key) {
        json_object *v;

        return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *string_member(json_object *o, const char *key) {
        json_object *v = member(o, key);

        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

int soak_daemon_kill_random(struct soak *s, char *name, size_t size) {
        json_object *status = soak_daemon_status(s, 5000), *servers = status ? member(status, "servers") : NULL;
        json_object *ready[8];
        size_t n = 0, count = servers ? json_object_array_length(servers) : 0;
        pid_t pid;

        if (!status)
                return -ETIMEDOUT;
        for (size_t i = 0; i < count && n < 8; i++) {
                json_object *row = json_object_array_get_idx(servers, i);
                if (strcmp(string_member(row, "state"), "ready") == 0 && !member(row, "removed") &&
                    json_object_is_type(member(row, "pid"), json_type_int))
                        ready[n++] = row;
        }
        if (n == 0) {
                json_object_put(status);
                return -ENOENT;
        }
        json_object *victim = ready[soak_rand(s) % n];
        pid = json_object_get_int(member(victim, "pid"));
        snprintf(name, size, "%s", string_member(victim, "name"));
        json_object_put(status);
        return kill(pid, SIGKILL) < 0 ? -errno : 0;
}

/* True if status shows the settled state of variant v; else false, with the reason in why. */
static bool check_settled(json_object *status, unsigned v, char *why, size_t size) {
        json_object *servers = member(status, "servers"), *daemon = member(status, "daemon");
        size_t count = servers ? json_object_array_length(servers) : 0, expected = 0;

        for (const char *const *n = soak_servers; *n; n++)
                expected += soak_config_has(v, *n);
        if (json_object_get_int(member(daemon, "clients")) != 0) {
                snprintf(why, size, "%d clients still connected", json_object_get_int(member(daemon, "clients")));
                return false;
        }
        if (count != expected) {
                snprintf(why, size, "%zu servers listed, %zu expected", count, expected);
                return false;
        }
        for (size_t i = 0; i < count; i++) {
                json_object *row = json_object_array_get_idx(servers, i);
                const char *name = string_member(row, "name"), *state = string_member(row, "state");

                if (!soak_config_has(v, name) || member(row, "removed")) {
                        snprintf(why, size, "server %s listed", name);
                        return false;
                }
                if (strcmp(state, "ready") != 0) {
                        snprintf(why, size, "server %s is %s", name, state);
                        return false;
                }
                if (json_object_get_int64(member(row, "inFlight")) != 0) {
                        snprintf(why, size, "server %s has %lld requests in flight", name,
                                 (long long)json_object_get_int64(member(row, "inFlight")));
                        return false;
                }
        }
        return true;
}

bool soak_daemon_settled(struct soak *s, unsigned v, int timeout_ms, char *why, size_t size) {
        uint64_t deadline = soak_now_ms() + (uint64_t)timeout_ms;

        for (;;) {
                json_object *status = soak_daemon_status(s, remaining(deadline) > 1000 ? remaining(deadline) : 1000);
                bool settled = status && check_settled(status, v, why, size);

                if (!status)
                        snprintf(why, size, "no status answer from the control socket");
                json_object_put(status);
                if (settled)
                        return true;
                if (remaining(deadline) == 0)
                        return false;
                poll(NULL, 0, 100); /* the daemon has no event to tell us; ask again shortly */
        }
}

int soak_daemon_sample(struct soak *s, struct soak_sample *out) {
        out->rss_kb = proc_rss_kib(s->d.pid);
        out->fds = proc_fd_count(s->d.pid);
        return out->rss_kb < 0 || out->fds < 0 ? -ESRCH : 0;
}

static int compare_strings(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "pipe:[123]" and "socket:[456]" differ by inode only: kept as their kind. */
static void fd_kind(const char *target, char *kind, size_t size) {
        const char *bracket = strstr(target, ":[");

        if (bracket && strncmp(target, "anon_inode:", 11) != 0)
                snprintf(kind, size, "%.*s", (int)(bracket - target), target);
        else
                snprintf(kind, size, "%s", target);
}

char *soak_daemon_fd_list(struct soak *s) {
        char path[64], link[600], target[256], *text = NULL, *kinds[1024];
        size_t n = 0, len = 0;
        struct dirent *e;
        FILE *out;
        DIR *dir;

        snprintf(path, sizeof path, "/proc/%d/fd", (int)s->d.pid);
        dir = opendir(path);
        if (!dir)
                return strdup("(gone)");
        while ((e = readdir(dir)) && n < 1024) {
                ssize_t k;
                if (e->d_name[0] == '.')
                        continue;
                snprintf(link, sizeof link, "%s/%s", path, e->d_name);
                k = readlink(link, target, sizeof target - 1);
                if (k < 0)
                        continue;
                target[k] = '\0';
                kinds[n] = malloc(256);
                fd_kind(target, kinds[n], 256);
                n++;
        }
        closedir(dir);
        qsort(kinds, n, sizeof *kinds, compare_strings);
        out = open_memstream(&text, &len);
        for (size_t i = 0; i < n;) {
                size_t j = i;
                while (j < n && strcmp(kinds[j], kinds[i]) == 0)
                        j++;
                fprintf(out, "  %3zu x %s\n", j - i, kinds[i]);
                i = j;
        }
        fclose(out);
        for (size_t i = 0; i < n; i++)
                free(kinds[i]);
        return text;
}

bool soak_daemon_reap(struct soak *s) {
        siginfo_t info = { 0 };

        if (s->d.exited)
                return true;
        if (waitid(P_PIDFD, (id_t)s->d.pidfd, &info, WEXITED | WNOHANG) < 0 || info.si_pid == 0)
                return false;
        s->d.exited = true;
        s->d.wait_status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : info.si_status & 0x7f;
        return true;
}

bool soak_daemon_stop(struct soak *s, int timeout_ms) {
        struct pollfd p = { s->d.pidfd, POLLIN, 0 };

        if (!s->d.exited)
                kill(s->d.pid, SIGTERM);
        if (!s->d.exited && poll(&p, 1, timeout_ms) <= 0) {
                fprintf(stderr, "soak: the daemon did not exit within %d ms of SIGTERM; killing it\n", timeout_ms);
                kill(s->d.pid, SIGKILL);
                poll(&p, 1, 5000);
                soak_daemon_reap(s);
                return false;
        }
        soak_daemon_reap(s);
        return WIFEXITED(s->d.wait_status) && WEXITSTATUS(s->d.wait_status) == 0;
}

/* A process the daemon left behind, now ours (the soak is a subreaper): reported, ended. */
static bool left_behind(pid_t pid, void *arg) {
        struct proc_stat st;

        if (!proc_stat(pid, &st) || st.ppid != getpid())
                return false;
        fprintf(arg, "soak: left behind by the daemon: pid %d (%s)\n", (int)pid, st.comm);
        kill(pid, SIGKILL);
        return true;
}

unsigned soak_leftovers(struct soak *s, FILE *report) {
        int count = proc_count(left_behind, report);
        int status;

        while (waitpid(-1, &status, WNOHANG) > 0)
                ; /* counted above, alive or zombie */
        return count > 0 ? (unsigned)count : 0;
}

void soak_daemon_log_tail(struct soak *s, unsigned lines) {
        FILE *f = fopen(s->d.log, "re");
        char *text = NULL, *start;
        size_t len = 0, cap = 0;
        unsigned seen = 0;
        ssize_t n;

        if (!f)
                return;
        while ((n = getdelim(&text, &cap, '\0', f)) > 0)
                len = (size_t)n; /* the log holds no NUL: one read is the whole file */
        fclose(f);
        if (!text)
                return;
        start = text + len;
        while (start > text && seen <= lines)
                if (*--start == '\n')
                        seen++;
        fprintf(stderr, "---- last lines of the daemon's log (%s) ----\n%s\n----\n", s->d.log,
                start == text ? start : start + 1);
        free(text);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

void soak_daemon_cleanup(struct soak *s, bool keep) {
        if (s->d.pidfd >= 0)
                close(s->d.pidfd);
        s->d.pidfd = -1;
        if (!keep && s->d.dir[0])
                nftw(s->d.dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}
