/* `lazytensor export-images --data fashion-mnist|fake --out DIR --format
 * png|jpeg`: writes a dataset as an ImageFolder tree (DIR/train/<class>/
 * and DIR/val/<class>/, files numbered in dataset order), so the image
 * pipeline can be checked on a real dataset against the IDX run, without
 * downloading anything. JPEG quality 90, 4:2:0 (gray: one channel). */
#include "batches.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int mkdir_ok(const char *p) {
    if (!mkdir(p, 0755) || errno == EEXIST) return 0;
    fprintf(stderr, "lazytensor: export-images: cannot create %s: %s\n", p, strerror(errno));
    return -1;
}

static int export_split(const cli_opts *o, bool train, bool png) {
    cli_opts so = *o;
    so.test_size = -1;
    cli_batches b;
    if (batches_open(&b, &so, train)) return -1;
    const data_set *ds = &b.ds;
    const char *split = train ? "train" : "val";
    size_t npx = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
    uint8_t *chw = malloc(npx), *hwc = malloc(npx);
    char path[4096], msg[IMG_MSG];
    int rc = chw && hwc ? 0 : -1;
    snprintf(path, sizeof path, "%s/%s", o->out, split);
    if (!rc) rc = mkdir_ok(path);
    for (int c = 0; !rc && c < ds->classes; c++) {
        snprintf(path, sizeof path, "%s/%s/%d", o->out, split, c);
        rc = mkdir_ok(path);
    }
    for (int64_t i = 0; !rc && i < ds->n; i++) {
        int label = data_sample(ds, i, chw);
        for (size_t p = 0; p < (size_t)ds->h * (size_t)ds->w; p++) /* (C, H, W) -> (H, W, C) */
            for (int c = 0; c < ds->c; c++) hwc[p * (size_t)ds->c + (size_t)c] = chw[(size_t)c * (npx / (size_t)ds->c) + p];
        snprintf(path, sizeof path, "%s/%s/%d/%06lld.%s", o->out, split, label, (long long)i, png ? "png" : "jpg");
        FILE *f = fopen(path, "wb");
        rc = !f ? (snprintf(msg, sizeof msg, "%s", strerror(errno)), -1)
             : png ? img_png_write(f, hwc, ds->w, ds->h, ds->c, msg)
                   : img_jpeg_write(f, hwc, ds->w, ds->h, ds->c, 90, msg);
        if (f && fclose(f) && !rc) rc = -1, snprintf(msg, sizeof msg, "%s", strerror(errno));
        if (rc) fprintf(stderr, "lazytensor: export-images: %s: %s\n", path, msg);
    }
    if (!rc) printf("%s: %lld images in %d classes\n", split, (long long)ds->n, ds->classes);
    free(chw), free(hwc);
    batches_close(&b);
    return rc;
}

int cmd_export_images(const cli_opts *o) {
    if (!o->out || !strcmp(o->data, "imagefolder")) {
        fprintf(stderr, "lazytensor: export-images needs --out DIR and --data fashion-mnist or fake\n");
        return 2;
    }
    bool png = !o->format || !strcmp(o->format, "png");
    if (!img_have(png ? IMG_PNG : IMG_JPEG)) {
        fprintf(stderr, "lazytensor: export-images: %s support was not built\n", png ? "PNG" : "JPEG");
        return 1;
    }
    if (mkdir_ok(o->out) || export_split(o, true, png) || export_split(o, false, png)) return 1;
    return 0;
}
