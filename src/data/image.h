/* Image folders: decoding (JPEG through libjpeg-turbo, PNG through libspng),
 * torchvision's transforms, and a loader whose decoder threads fill host
 * batches while the training thread runs the step.
 *
 * Nothing here calls the tensor API from a worker thread (the library is
 * single-threaded by contract): decoders and transforms work on plain
 * buffers and report failures in a caller's message buffer, not in the
 * library's thread-local error. Only data_folder_open/data_floader_* on
 * the training thread set the library error. */
#ifndef LT_DATA_IMAGE_H
#define LT_DATA_IMAGE_H

#include "data.h"

#include <stdio.h>

/* ---- decoding (decode.c, jpeg.c, png.c) ---- */
/* A decompression bomb is refused before anything is allocated for it
 * (PIL's own limit: Image.MAX_IMAGE_PIXELS). */
#define IMG_MAX_PIXELS 89478485ll
#define IMG_MAX_SIDE 65535
#define IMG_MAX_FILE (256u << 20)
#define IMG_MSG 160

typedef enum { IMG_UNKNOWN, IMG_JPEG, IMG_PNG } img_format;

/* A decoded image, or the rectangle of it that was asked for: h rows of w
 * pixels of 3 bytes (RGB) whose top left is (x0, y0) of the (scaled)
 * image; `px` owned and reused across calls (grows only). */
typedef struct img {
    int w, h, x0, y0;
    uint8_t *px;
    size_t cap;
    void *jpeg;        /* the libjpeg decompressor, created at the first JPEG */
    uint8_t *cmyk;     /* CMYK JPEGs decode here first */
    size_t cmyk_cap;
} img;

/* Whether the codec was compiled in (feature off when its library was
 * missing at configure time). */
bool img_have(img_format f);
img_format img_sniff(const uint8_t *buf, size_t n);
/* The image's size from its header alone (no pixel is decoded); 0 or -1
 * with a reason in msg. Sizes outside 1..IMG_MAX_SIDE or with more than
 * IMG_MAX_PIXELS pixels are refused. */
int img_probe(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]);
/* Reads a whole regular file (at most IMG_MAX_FILE bytes) into *buf,
 * grown as needed; 0 or -1 with a reason in msg. */
int img_read_file(const char *path, uint8_t **buf, size_t *cap, size_t *n, char msg[IMG_MSG]);
/* A rectangle [x0, x1) x [y0, y1) of pixels. */
typedef struct img_rect {
    int x0, y0, x1, y1;
} img_rect;
/* Decodes to RGB. `denom` in {1, 2, 4, 8}: JPEG decodes at 1/denom scale
 * through its DCT (rounded up as libjpeg does); PNG ignores it (always 1).
 * `want` (NULL: everything), in pixels of the scaled image: JPEG may decode
 * only a rectangle that covers it (out->x0, y0 say where it starts; the
 * pixels are those of the whole decode); PNG always decodes everything.
 * Whether a file decodes never depends on `want`. Returns the denominator
 * actually used, or -1 with a reason in msg. */
int img_decode(const uint8_t *buf, size_t n, int denom, const img_rect *want, img *out, char msg[IMG_MSG]);
void img_free(img *im);

/* Per codec, called by decode.c after the header checks. */
int img_jpeg_header(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]);
int img_jpeg_decode(const uint8_t *buf, size_t n, int denom, const img_rect *want, img *out, char msg[IMG_MSG]);
void img_jpeg_close(img *im); /* frees the libjpeg decompressor */
int img_png_header(img *im, const uint8_t *buf, size_t n, int *w, int *h, char msg[IMG_MSG]);
int img_png_decode(const uint8_t *buf, size_t n, img *out, char msg[IMG_MSG]);
/* Encoders (for `lazytensor export-images` and tests): w x h pixels of ch
 * (1: gray, 3: RGB) bytes to an open file. 0, or -1 with a reason. */
int img_png_write(FILE *f, const uint8_t *px, int w, int h, int ch, char msg[IMG_MSG]);
int img_jpeg_write(FILE *f, const uint8_t *px, int w, int h, int ch, int quality, char msg[IMG_MSG]);
/* Grows im->px to w*h*3 bytes; -1 on allocation failure. */
int img_reserve(img *im, int w, int h);

/* ---- transforms (resize.c, transform.c) ---- */
/* A box of the source image, in source pixels (fractional after a scaled
 * JPEG decode). */
typedef struct img_box {
    double x0, y0, x1, y1;
} img_box;

/* Antialiased bilinear resampling exactly as PIL's Image.resize(BILINEAR)
 * (ImagingResample: a triangle filter whose support grows with the
 * downscale factor, 22-bit fixed-point weights, horizontal pass rounded to
 * 8 bits, then vertical). Resamples `box` of src (sw x sh x ch) to an output
 * of ow x oh and writes the window [wx, wx+ww) x [wy, wy+wh) of it to dst
 * (ww x wh x ch): Resize followed by CenterCrop computes only the pixels the
 * crop keeps. Filter taps are clamped to the pixels the box touches, as if
 * the box had been cropped first. `tmp` is scratch (grown as needed).
 * -1 on allocation failure. */
int img_resample(const uint8_t *src, int sw, int sh, int ch, img_box box, int ow, int oh, int wx, int wy, int ww, int wh,
                 uint8_t *dst, uint8_t **tmp, size_t *tmp_cap);

/* torchvision's RandomResizedCrop.get_params(img, scale=(0.08, 1),
 * ratio=(3/4, 4/3)): ten tries at a random area and log-uniform aspect
 * ratio, then the center crop fallback. `rng` is the sample's random
 * state; x, y, w, h the integer crop. */
void img_rrc_params(int iw, int ih, uint64_t *rng, int *x, int *y, int *w, int *h);
/* torchvision's Resize(short_side) output size and CenterCrop(size) offset. */
void img_resize_size(int iw, int ih, int short_side, int *ow, int *oh);
int img_center_offset(int outer, int inner);

/* The whole per-sample transform. Training: RandomResizedCrop(size) +
 * RandomHorizontalFlip from (seed, epoch, sample); evaluation:
 * Resize(resize) + CenterCrop(size) (resize 0: center crop only). Then
 * (x/255 - mean) / std into CHW floats, RGB or luma (channels 1, PIL's
 * convert("L") weights). */
typedef struct img_tf {
    int size, channels, resize;
    bool train;
    bool dct_scale; /* JPEG: decode at 1/2..1/8 when the crop shrinks that much */
    uint64_t seed;
    float mean[3], std[3];
} img_tf;

/* Scratch a worker reuses for every sample. */
typedef struct img_work {
    uint8_t *file;
    size_t file_cap;
    img im;
    uint8_t *out, *tmp;
    size_t out_cap, tmp_cap;
} img_work;
void img_work_free(img_work *w);

/* The JPEG scale denominator (1, 2, 4 or 8) for decoding an iw x ih image
 * of which a cw x ch crop is resampled to out x out: the smallest
 * decode that still has at least `out` pixels across the crop, so the
 * resize only ever shrinks. */
int img_jpeg_denom(int cw, int ch, int out);
/* Decodes `buf` and writes the transformed sample to dst (channels x size x
 * size floats). 0, or -1 with a reason in msg. */
int img_transform(const img_tf *tf, const uint8_t *buf, size_t n, int64_t epoch, int64_t sample, img_work *w,
                  float *dst, char msg[IMG_MSG]);

/* ---- ImageFolder (folder.c) ---- */
/* DIR/<split>/<class>/<file>: class index = the class folder's position in
 * sorted order (torchvision's ImageFolder); files sorted within a class;
 * only .jpg, .jpeg and .png (any case) are samples, other files are
 * ignored as torchvision ignores them. */
typedef struct data_folder {
    int64_t n;
    int classes;
    char **class_names; /* classes entries */
    char **paths;       /* n entries */
    int32_t *labels;    /* n entries */
} data_folder;

/* 0, or -1 with the library error set: unreadable directory, no class
 * folders, a class folder without images. */
int data_folder_open(data_folder *f, const char *dir, const char *split);
void data_folder_free(data_folder *f);

/* ---- the threaded loader (floader.c) ---- */
typedef struct data_floader data_floader;
#define DATA_MAX_WORKERS 64

typedef struct data_floader_cfg {
    int64_t batch;
    bool shuffle, drop_last;
    int workers;    /* 0: decode on the calling thread */
    int prefetch;   /* batches decoded ahead (>= 1) */
    bool fail_bad;  /* a bad image ends the run instead of being skipped */
    /* This process reads every world-th sample of each epoch's order, from
     * rank (torch's DistributedSampler; with drop_last the first
     * floor(n / world) * world only): batch b of the W ranks together holds
     * the images of batch b of one loader W times larger. */
    int rank, world;
    FILE *warn;     /* one line per bad file; NULL: quiet */
    img_tf tf;
} data_floader_cfg;

/* Borrows f (it must outlive the loader). NULL with the library error set. */
data_floader *data_floader_new(const data_folder *f, const data_floader_cfg *cfg);
void data_floader_free(data_floader *l);
/* Sets the configuration's (rank, world) after the fact (the CLI opens a
 * split, then shards it), before the first batch is read. 0, or -1 with
 * the library error set. */
int data_floader_shard(data_floader *l, int rank, int world);
/* Batches of one epoch for this rank. */
int64_t data_floader_batches(const data_floader *l);
/* Batch b of `epoch` as new tensors x (rows, C, S, S) f32 and y (rows) i64
 * (free both with lt_free). Batches must be asked in order within an
 * epoch (the loader decodes ahead). Returns rows, 0 past the end, -1 with
 * the library error set (a bad image under fail_bad, out of memory). */
int64_t data_floader_next(data_floader *l, int64_t epoch, int64_t b, lt_tensor **x, lt_tensor **y);
/* Counters: distinct bad files skipped, images decoded, seconds the caller
 * waited in data_floader_next for a batch not ready yet. */
typedef struct data_floader_stats {
    int64_t skipped, decoded;
    double wait_s;
} data_floader_stats;
data_floader_stats data_floader_stats_get(const data_floader *l);

#endif
