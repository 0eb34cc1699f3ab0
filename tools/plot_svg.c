/* --plot: one self-contained SVG (no scripts, no external fonts): training
 * loss per step (continuing a resumed run's curve from its checkpoint),
 * test accuracy per evaluation, and a bar of where the training time went.
 * Both charts have value ticks and gridlines on both axes, at "nice" values
 * (1, 2 or 5 times a power of ten), and the loss chart marks each epoch. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define W 840
#define H 620

/* A chart's box in pixels and the data range it shows. */
typedef struct frame {
    int x, y, w, h;
    double x0, x1, y0, y1;
} frame;

static double px(const frame *fr, double v) { return fr->x + (v - fr->x0) / (fr->x1 - fr->x0) * fr->w; }
static double py(const frame *fr, double v) { return fr->y + fr->h - (v - fr->y0) / (fr->y1 - fr->y0) * fr->h; }

/* About n intervals over span, each 1, 2 or 5 times a power of ten. */
static double nice_step(double span, int n) {
    double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* Title, box, and ticks with gridlines and labels on both axes. */
static void axes(FILE *f, const frame *fr, const char *title, const char *xlabel, bool int_x) {
    fprintf(f, "<text x='%d' y='%d' font-size='14' font-weight='bold'>%s</text>\n", fr->x, fr->y - 10, title);
    double ys = nice_step(fr->y1 - fr->y0, 5);
    for (double v = ceil(fr->y0 / ys - 1e-9) * ys; v <= fr->y1 + ys * 1e-9; v += ys) {
        double y = py(fr, v);
        fprintf(f, "<line class='grid' x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#e4e4e4'/>"
                   "<line class='tick' x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#555'/>"
                   "<text class='ytick' x='%d' y='%.1f' font-size='11' text-anchor='end'>%g</text>\n",
                fr->x, y, fr->x + fr->w, y, fr->x - 4, y, fr->x, y, fr->x - 7, y + 4, fabs(v) < ys * 1e-9 ? 0 : v);
    }
    double xs = nice_step(fr->x1 - fr->x0, 8);
    if (int_x && xs < 1) xs = 1;
    for (double v = ceil(fr->x0 / xs - 1e-9) * xs; v <= fr->x1 + xs * 1e-9; v += xs) {
        double x = px(fr, v);
        fprintf(f, "<line class='grid' x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#e4e4e4'/>"
                   "<line class='tick' x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#555'/>"
                   "<text class='xtick' x='%.1f' y='%d' font-size='11' text-anchor='middle'>%g</text>\n",
                x, fr->y, x, fr->y + fr->h, x, fr->y + fr->h, x, fr->y + fr->h + 4, x, fr->y + fr->h + 16,
                fabs(v) < xs * 1e-9 ? 0 : v);
    }
    fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#999'/>\n", fr->x, fr->y, fr->w,
            fr->h);
    fprintf(f, "<text x='%d' y='%d' font-size='11' text-anchor='middle'>%s</text>\n", fr->x + fr->w / 2,
            fr->y + fr->h + 32, xlabel);
}

/* Steps shown: from the start of the known curve to the end of this run. */
static void step_range(const run_stats *st, double *a, double *b) {
    *a = (double)(st->nhist ? st->hist_from : st->first_step);
    *b = (double)(st->first_step + st->steps);
    if (*b <= *a) *b = *a + 1;
}

static void curve(FILE *f, const frame *fr, const double *v, int64_t n, int64_t step0, const char *color) {
    int64_t k = n > 2000 ? n / 2000 + 1 : 1; /* keep the file small */
    fprintf(f, "<polyline class='loss' fill='none' stroke='%s' stroke-width='1.2' points='", color);
    for (int64_t i = 0; i < n; i += k)
        if (isfinite(v[i])) fprintf(f, "%.1f,%.1f ", px(fr, (double)(step0 + i + 1)), py(fr, fmin(v[i], fr->y1)));
    fprintf(f, "'/>\n");
}

static void loss_panel(FILE *f, const run_stats *st) {
    frame fr = {70, 40, 730, 250, 0, 1, 0, 1};
    step_range(st, &fr.x0, &fr.x1);
    double hi = 0;
    for (int64_t i = 0; i < st->steps; i++)
        if (isfinite(st->loss[i]) && st->loss[i] > hi) hi = st->loss[i];
    for (int64_t i = 0; i < st->nhist; i++)
        if (isfinite(st->hist[i]) && st->hist[i] > hi) hi = st->hist[i];
    double ys = nice_step(hi > 0 ? hi : 1, 5);
    fr.y1 = ceil((hi > 0 ? hi : 1) / ys) * ys;
    axes(f, &fr, "training loss per step", "step", true);
    /* epochs: a dashed line at each boundary, labelled (every k-th when crowded) */
    int64_t spe = st->steps_per_epoch;
    if (spe > 0) {
        int64_t e0 = (int64_t)ceil(fr.x0 / (double)spe), e1 = (int64_t)floor(fr.x1 / (double)spe);
        int64_t every = (e1 - e0) / 12 + 1;
        for (int64_t e = e0 > 0 ? e0 : 1; e <= e1; e++) {
            double x = px(&fr, (double)(e * spe));
            fprintf(f, "<line class='epoch' x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#b0b0b0' "
                       "stroke-dasharray='4,3'/>\n",
                    x, fr.y, x, fr.y + fr.h);
            if (e % every == 0)
                fprintf(f, "<text class='epoch' x='%.1f' y='%d' font-size='10' fill='#777' text-anchor='end'>epoch "
                           "%lld</text>\n",
                        x - 3, fr.y + 12, (long long)e);
        }
    }
    if (st->nhist) { /* the checkpoint's part of the curve, then where this run resumed */
        curve(f, &fr, st->hist, st->nhist, st->hist_from, "#9ecae1");
        double x = px(&fr, (double)st->first_step);
        fprintf(f, "<line class='resume' x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#ff7f0e'/>"
                   "<text x='%.1f' y='%d' font-size='10' fill='#ff7f0e'>resumed at step %lld</text>\n",
                x, fr.y, x, fr.y + fr.h, x + 3, fr.y + fr.h - 6, (long long)st->first_step);
    }
    curve(f, &fr, st->loss, st->steps, st->first_step, "#1f77b4");
}

static void acc_panel(FILE *f, const run_stats *st) {
    frame fr = {70, 375, 330, 190, 0, 1, 0, 100};
    step_range(st, &fr.x0, &fr.x1);
    if (!st->nacc) {
        axes(f, &fr, "test accuracy (%) per evaluation", "step", true);
        fprintf(f, "<text x='%d' y='%d' font-size='12' fill='#777'>no evaluation</text>\n", fr.x + 20, fr.y + fr.h / 2);
        return;
    }
    double lo = 100, hi = 0;
    for (int i = 0; i < st->nacc; i++) lo = fmin(lo, st->acc[i]), hi = fmax(hi, st->acc[i]);
    fr.y0 = fmax(0, floor(lo / 10) * 10 - (hi - lo < 5 ? 10 : 0));
    fr.y1 = fmin(100, ceil(hi / 10) * 10 + (hi - lo < 5 ? 10 : 0));
    if (fr.y1 <= fr.y0) fr.y1 = fr.y0 + 10;
    axes(f, &fr, "test accuracy (%) per evaluation", "step", true);
    /* the latest value as a dashed guide across the chart, so even one
     * evaluation reads as a level, not a lone dot */
    double last = st->acc[st->nacc - 1], y = py(&fr, last);
    fprintf(f, "<line class='acc' x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#2ca02c' stroke-dasharray='5,4'/>"
               "<text x='%d' y='%.1f' font-size='11' fill='#2ca02c' text-anchor='end'>latest %.2f%%</text>\n",
            fr.x, y, fr.x + fr.w, y, fr.x + fr.w - 4, y < fr.y + 14 ? y + 14 : y - 5, last);
    fprintf(f, "<polyline class='acc' fill='none' stroke='#2ca02c' stroke-width='1.5' points='");
    for (int i = 0; i < st->nacc; i++) fprintf(f, "%.1f,%.1f ", px(&fr, (double)st->acc_step[i]), py(&fr, st->acc[i]));
    fprintf(f, "'/>\n");
    for (int i = 0; i < st->nacc; i++) {
        double cx = px(&fr, (double)st->acc_step[i]), cy = py(&fr, st->acc[i]);
        fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='#2ca02c'/>"
                   "<text class='accval' x='%.1f' y='%.1f' font-size='11' text-anchor='middle'>%.2f</text>\n",
                cx, cy, cx, cy + 15, st->acc[i]);
    }
}

/* Seconds as a person reads them: milliseconds under one second. */
static const char *dur(char *buf, size_t n, double s) {
    if (s < 1) snprintf(buf, n, "%.1f ms", s * 1e3);
    else snprintf(buf, n, "%.1f s", s);
    return buf;
}

static void time_panel(FILE *f, const run_stats *st) {
    int x = 470, y = 375, w = 330, h = 40;
    const char *name[4] = {"trace", "compile", "execute", "data"}, *col[4] = {"#ff7f0e", "#d62728", "#1f77b4", "#7f7f7f"};
    double v[4] = {st->trace_s, st->compile_s, st->exec_s, st->data_s}, tot = 0;
    for (int i = 0; i < 4; i++) tot += v[i] > 0 ? v[i] : 0;
    char b[32];
    fprintf(f, "<text x='%d' y='%d' font-size='14' font-weight='bold'>where the time went (%s)</text>\n", x, y - 10,
            dur(b, sizeof b, tot));
    double cx = x;
    for (int i = 0; i < 4; i++) {
        double bw = tot > 0 && v[i] > 0 ? v[i] / tot * w : 0;
        fprintf(f, "<rect x='%.1f' y='%d' width='%.1f' height='%d' fill='%s'/>\n", cx, y, bw, h, col[i]);
        cx += bw;
        fprintf(f, "<rect x='%d' y='%d' width='12' height='12' fill='%s'/>"
                   "<text class='split' x='%d' y='%d' font-size='12'>%s %s (%.1f%%)</text>\n",
                x, y + h + 16 + 20 * i, col[i], x + 18, y + h + 26 + 20 * i, name[i], dur(b, sizeof b, v[i]),
                tot > 0 ? 100 * v[i] / tot : 0);
    }
}

int plot_svg(const char *path, const run_stats *st) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "lazytensor: --plot %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='%d' "
               "height='%d' viewBox='0 0 %d %d' font-family='sans-serif'>\n<rect width='100%%' height='100%%' "
               "fill='white'/>\n<title>lazytensor train: %s on %s</title>\n",
            W, H, W, H, st->model, st->data);
    loss_panel(f, st);
    acc_panel(f, st);
    time_panel(f, st);
    fprintf(f, "</svg>\n");
    if (ferror(f) | fclose(f)) {
        fprintf(stderr, "lazytensor: --plot %s: writing failed: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}
