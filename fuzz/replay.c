/* The replay driver: in builds without libFuzzer (gcc, the ASan build) each harness is
 * linked with this main(), which runs LLVMFuzzerTestOneInput once over every file named on
 * the command line or found (recursively) in a directory named there. A harness that finds
 * a broken invariant aborts, so a regression input fails its ctest. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct replay {
        unsigned inputs;
        bool verbose;
};

static int replay_file(struct replay *r, const char *path) {
        FILE *f = fopen(path, "rbe");
        uint8_t *data = NULL;
        long size;

        if (!f) {
                fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
                return -1;
        }
        if (fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0 ||
            !(data = malloc((size_t)size + 1)) || fread(data, 1, (size_t)size, f) != (size_t)size) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                free(data);
                fclose(f);
                return -1;
        }
        fclose(f);
        if (r->verbose)
                fprintf(stderr, "replay: %s (%ld bytes)\n", path, size);
        LLVMFuzzerTestOneInput(data, (size_t)size);
        free(data);
        r->inputs++;
        return 0;
}

/* Hidden files (.gitkeep) are not inputs; entries in name order, so runs repeat. */
static int skip_hidden(const struct dirent *e) {
        return e->d_name[0] != '.';
}

static int replay_path(struct replay *r, const char *path) {
        struct dirent **entries;
        struct stat st;
        int n, failed = 0;

        if (stat(path, &st) < 0) {
                fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
                return -1;
        }
        if (!S_ISDIR(st.st_mode))
                return replay_file(r, path);
        n = scandir(path, &entries, skip_hidden, alphasort);
        if (n < 0) {
                fprintf(stderr, "replay: cannot list %s: %s\n", path, strerror(errno));
                return -1;
        }
        for (int i = 0; i < n; i++) {
                char *child;
                if (asprintf(&child, "%s/%s", path, entries[i]->d_name) < 0 || replay_path(r, child) < 0)
                        failed = -1;
                free(child);
                free(entries[i]);
        }
        free(entries);
        return failed;
}

int main(int argc, char **argv) {
        struct replay r = { .verbose = getenv("FUZZ_REPLAY_VERBOSE") != NULL };
        int failed = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
                return 2;
        }
        for (int i = 1; i < argc; i++)
                if (replay_path(&r, argv[i]) < 0)
                        failed = 1;
        printf("replay: %u inputs ran without a crash or a broken invariant\n", r.inputs);
        /* No input at all means the corpus went missing: that must not pass. */
        return failed || r.inputs == 0;
}
