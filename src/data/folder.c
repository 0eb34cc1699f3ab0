/* torchvision's ImageFolder layout: DIR/<split>/<class>/<file>. Classes are
 * the sub-folders in sorted order (their index is the label), files are
 * sorted within a class, and only image extensions count, so a README or a
 * .DS_Store in a class folder is not a sample. Problems with the layout
 * itself are errors here, before any training starts; problems with a
 * file's contents are the loader's counted skips. */
#include "image.h"

#include "../core/core.h"

#include <dirent.h>
#include <errno.h>
#include <strings.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool is_image_name(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".png"));
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

static void free_list(char **v, int64_t n) {
    for (int64_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* The sub-directory names (dirs) or the image files' full paths (!dirs) in
 * dir, sorted. *out malloc'd. Returns the count, or -1 with the library
 * error set. */
static int64_t list(const char *dir, bool dirs, char ***out) {
    DIR *d = opendir(dir);
    *out = NULL;
    if (!d) return err_set(LT_ERR_IO, "imagefolder: cannot read directory %s: %s", dir, strerror(errno)), -1;
    int64_t n = 0, cap = 0;
    char **v = NULL;
    struct dirent *e;
    bool oom = false;
    while (!oom && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue; /* ., .. and hidden files */
        char *full = join(dir, e->d_name);
        struct stat st;
        if (!full) oom = true;
        else if (!stat(full, &st) &&
                 (dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode) && is_image_name(e->d_name))) {
            if (n == cap) {
                char **nv = realloc(v, sizeof *v * (size_t)(cap = cap ? 2 * cap : 64));
                if (!nv) oom = true;
                else v = nv;
            }
            char *name = oom ? NULL : dirs ? strdup(e->d_name) : full;
            if (name) v[n++] = name;
            else oom = true;
            if (name == full) full = NULL;
        }
        free(full);
    }
    closedir(d);
    if (oom) {
        free_list(v, n);
        return err_set(LT_ERR_OOM, "imagefolder: out of memory listing %s", dir), -1;
    }
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

void data_folder_free(data_folder *f) {
    for (int i = 0; i < f->classes; i++) free(f->class_names[i]);
    for (int64_t i = 0; i < f->n; i++) free(f->paths[i]);
    free(f->class_names);
    free(f->paths);
    free(f->labels);
    memset(f, 0, sizeof *f);
}

int data_folder_open(data_folder *f, const char *dir, const char *split) {
    memset(f, 0, sizeof *f);
    char *root = join(dir, split);
    if (!root) return err_set(LT_ERR_OOM, "imagefolder: out of memory"), -1;
    char **cls;
    int64_t nc = list(root, true, &cls);
    if (nc == 0) err_set(LT_ERR_FORMAT, "imagefolder: no class folders in %s (expected %s/<class>/<image>)", root, root);
    if (nc <= 0 || nc > INT32_MAX) {
        free(cls);
        free(root);
        return -1;
    }
    f->class_names = cls;
    f->classes = (int)nc;
    int rc = 0;
    for (int c = 0; c < f->classes && !rc; c++) {
        char *cdir = join(root, cls[c]), **files = NULL;
        int64_t k = cdir ? list(cdir, false, &files) : (err_set(LT_ERR_OOM, "imagefolder: out of memory"), -1);
        if (k == 0) err_set(LT_ERR_FORMAT, "imagefolder: class folder %s has no .jpg, .jpeg or .png files", cdir);
        if (k > 0) {
            char **np = realloc(f->paths, sizeof *np * (size_t)(f->n + k));
            int32_t *nl = np ? realloc(f->labels, sizeof *nl * (size_t)(f->n + k)) : NULL;
            if (np) f->paths = np;
            if (nl) f->labels = nl;
            if (!np || !nl) {
                free_list(files, k);
                files = NULL;
                k = -1;
                err_set(LT_ERR_OOM, "imagefolder: out of memory");
            }
            for (int64_t i = 0; i < k; i++) f->paths[f->n + i] = files[i], f->labels[f->n + i] = c;
            if (k > 0) f->n += k;
        }
        if (k <= 0) rc = -1;
        free(files); /* the paths now belong to f */
        free(cdir);
    }
    free(root);
    if (rc) data_folder_free(f);
    return rc;
}
