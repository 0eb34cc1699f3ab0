/* Every file a run will write is checked before anything runs, so a bad
 * path is a usage error at once instead of a failure after an hour of
 * training. The check creates nothing: it looks at the file (a directory? not
 * writable?) and at the directory it would be created in. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int bad(const char *opt, const char *path, const char *what, const char *detail) {
    fprintf(stderr, "lazytensor: --%s %s: %s%s%s (nothing was run)\n", opt, path, what, detail ? ": " : "",
            detail ? detail : "");
    return -1;
}

static int check_path(const char *opt, const char *path) {
    struct stat sb;
    if (!*path) return bad(opt, "''", "empty path", NULL);
    if (!stat(path, &sb)) {
        if (S_ISDIR(sb.st_mode)) return bad(opt, path, "is a directory", NULL);
        if (access(path, W_OK)) return bad(opt, path, "cannot be overwritten", strerror(errno));
    } else if (errno != ENOENT) {
        return bad(opt, path, "cannot be written", strerror(errno));
    }
    /* the directory that will hold it (and, for --save, its PATH.tmp) */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    char what[4200];
    if (stat(dir, &sb)) {
        snprintf(what, sizeof what, "directory %s %s", dir, errno == ENOENT ? "does not exist" : strerror(errno));
        return bad(opt, path, what, NULL);
    }
    if (!S_ISDIR(sb.st_mode)) {
        snprintf(what, sizeof what, "%s is not a directory", dir);
        return bad(opt, path, what, NULL);
    }
    if (access(dir, W_OK | X_OK)) {
        snprintf(what, sizeof what, "cannot create files in %s", dir);
        return bad(opt, path, what, strerror(errno));
    }
    return 0;
}

int outputs_check(const cli_opts *o) {
    const struct {
        const char *opt, *path;
    } out[] = {{"save", o->save}, {"plot", o->plot}, {"trace-file", o->trace_file}};
    size_t n = sizeof out / sizeof out[0];
    for (size_t i = 0; i < n; i++) {
        if (!out[i].path) continue;
        if (check_path(out[i].opt, out[i].path)) return -1;
        for (size_t j = 0; j < i; j++)
            if (out[j].path && !strcmp(out[i].path, out[j].path)) {
                fprintf(stderr, "lazytensor: --%s and --%s name the same file %s (nothing was run)\n", out[j].opt,
                        out[i].opt, out[i].path);
                return -1;
            }
    }
    if (o->report && fcntl(STDOUT_FILENO, F_GETFL) == -1) {
        fprintf(stderr, "lazytensor: --report %s writes to stdout, which is closed (nothing was run)\n", o->report);
        return -1;
    }
    return 0;
}
