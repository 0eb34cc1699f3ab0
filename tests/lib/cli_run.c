/* Helpers for the tests that run the `lazytensor` program (cli_run.h). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "cli_run.h"

#include "data/image.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *cli_path;
char cli_tmp[128];

int cli_setup(const char *argv1, const char *test_name) {
    const char *p = argv1 ? argv1 : getenv("LT_CLI") ? getenv("LT_CLI") : "./lazytensor";
    static char abs[4096]; /* absolute: a test may start it in another directory */
    char cwd[2048];
    if (access(p, X_OK) || (p[0] != '/' && !getcwd(cwd, sizeof cwd))) {
        fprintf(stderr, "%s: %s not found (build the lazytensor program first)\n", test_name, p);
        return -1;
    }
    if (p[0] == '/') snprintf(abs, sizeof abs, "%s", p);
    else snprintf(abs, sizeof abs, "%s/%s", cwd, p);
    cli_path = abs;
    snprintf(cli_tmp, sizeof cli_tmp, "/tmp/%s_%d", test_name, (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", cli_tmp, cli_tmp);
    return system(cmd) ? -1 : 0;
}

void cli_cleanup(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cli_tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", cli_tmp);
}

int cli_run(char *out, size_t cap, bool both, const char *fmt, ...) {
    char cmd[2048], args[1600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s %s", cli_path, args, both ? "2>&1" : "2>/dev/null");
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

double cli_jnum(const char *js, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(js, pat);
    if (!p || !strncmp(p + strlen(pat), "null", 4)) return NAN;
    return strtod(p + strlen(pat), NULL);
}

int cli_jlosses(const char *js, double *out, int max) {
    const char *p = strstr(js, "\"losses\": [");
    if (!p) return -1;
    p += strlen("\"losses\": [");
    int n = 0;
    while (*p && *p != ']' && n < max) {
        char *end;
        out[n++] = strtod(p, &end);
        if (end == p) return -1;
        p = end;
        while (*p == ',' || *p == ' ') p++;
    }
    return n;
}

char *cli_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (n + 1 == cap) {
            char *q = realloc(buf, cap *= 2);
            if (!q) free(buf);
            buf = q;
        }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int cli_png_folder(const char *dir, int per_class, int size, unsigned char (*pixel)(int c, int i, size_t k)) {
    size_t n = (size_t)size * (size_t)size * 3;
    uint8_t *px = malloc(n);
    char p[512], msg[IMG_MSG];
    int rc = px ? 0 : -1;
    for (int split = 0; split < 2 && !rc; split++)
        for (int c = 0; c < 2 && !rc; c++) {
            snprintf(p, sizeof p, "mkdir -p %s/%s/class%d", dir, split ? "val" : "train", c);
            if (system(p) != 0) rc = -1;
            for (int i = 0; i < per_class && !rc; i++) {
                for (size_t k = 0; k < n; k++) px[k] = pixel(c, i, k);
                snprintf(p, sizeof p, "%s/%s/class%d/%d.png", dir, split ? "val" : "train", c, i);
                FILE *f = fopen(p, "wb");
                if (!f || img_png_write(f, px, size, size, 3, msg)) {
                    fprintf(stderr, "cli_png_folder: %s: %s\n", p, f ? msg : "cannot create");
                    rc = -1;
                }
                if (f) fclose(f);
            }
        }
    free(px);
    return rc;
}
