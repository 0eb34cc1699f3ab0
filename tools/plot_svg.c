/* --plot: one self-contained SVG (no scripts, no external fonts): training
 * loss per step, test accuracy per evaluation, and a bar of where the
 * training time went. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define W 840
#define H 600

static void axes(FILE *f, int x, int y, int w, int h, const char *title, double y0, double y1, const char *xl) {
    fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#999'/>\n", x, y, w, h);
    fprintf(f, "<text x='%d' y='%d' font-size='14' font-weight='bold'>%s</text>\n", x, y - 8, title);
    fprintf(f, "<text x='%d' y='%d' font-size='11' text-anchor='end'>%.3g</text>\n", x - 4, y + 10, y1);
    fprintf(f, "<text x='%d' y='%d' font-size='11' text-anchor='end'>%.3g</text>\n", x - 4, y + h, y0);
    fprintf(f, "<text x='%d' y='%d' font-size='11' text-anchor='middle'>%s</text>\n", x + w / 2, y + h + 28, xl);
}

static void loss_panel(FILE *f, const run_stats *st) {
    int x = 70, y = 40, w = 730, h = 260;
    double hi = 0;
    for (int64_t i = 0; i < st->steps; i++)
        if (isfinite(st->loss[i]) && st->loss[i] > hi) hi = st->loss[i];
    if (hi <= 0) hi = 1;
    axes(f, x, y, w, h, "training loss per step", 0, hi, "step");
    int64_t n = st->steps, k = n > 2000 ? n / 2000 + 1 : 1; /* keep the file small */
    fprintf(f, "<text x='%d' y='%d' font-size='11'>%lld</text>", x, y + h + 14, (long long)st->first_step + 1);
    fprintf(f, "<text x='%d' y='%d' font-size='11' text-anchor='end'>%lld</text>\n", x + w, y + h + 14,
            (long long)(st->first_step + n));
    fprintf(f, "<polyline fill='none' stroke='#1f77b4' stroke-width='1.2' points='");
    for (int64_t i = 0; i < n; i += k) {
        if (!isfinite(st->loss[i])) continue;
        double px = x + (n > 1 ? (double)i / (double)(n - 1) : 0.5) * w, py = y + h - st->loss[i] / hi * h;
        fprintf(f, "%.1f,%.1f ", px, py);
    }
    fprintf(f, "'/>\n");
}

static void acc_panel(FILE *f, const run_stats *st) {
    int x = 70, y = 370, w = 330, h = 180;
    double lo = 100, hi = 0;
    for (int i = 0; i < st->nacc; i++) {
        if (st->acc[i] < lo) lo = st->acc[i];
        if (st->acc[i] > hi) hi = st->acc[i];
    }
    lo = st->nacc ? floor(lo / 10) * 10 : 0;
    hi = st->nacc ? fmin(100, ceil(hi / 10) * 10 + (hi >= lo + 10 ? 0 : 10)) : 100;
    axes(f, x, y, w, h, "test accuracy (%) per epoch", lo, hi, "epoch");
    if (!st->nacc) {
        fprintf(f, "<text x='%d' y='%d' font-size='12' fill='#777'>no evaluation</text>\n", x + 20, y + h / 2);
        return;
    }
    fprintf(f, "<polyline fill='none' stroke='#2ca02c' stroke-width='1.5' points='");
    for (int i = 0; i < st->nacc; i++)
        fprintf(f, "%.1f,%.1f ", x + (st->nacc > 1 ? (double)i / (st->nacc - 1) : 0.5) * w,
                y + h - (st->acc[i] - lo) / (hi - lo) * h);
    fprintf(f, "'/>\n");
    for (int i = 0; i < st->nacc; i++) {
        double px = x + (st->nacc > 1 ? (double)i / (st->nacc - 1) : 0.5) * w, py = y + h - (st->acc[i] - lo) / (hi - lo) * h;
        fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='#2ca02c'/>"
                   "<text x='%.1f' y='%.1f' font-size='11' text-anchor='middle'>%.2f</text>\n",
                px, py, px, py - 8, st->acc[i]);
    }
}

static void time_panel(FILE *f, const run_stats *st) {
    int x = 470, y = 370, w = 330, h = 40;
    const char *name[4] = {"trace", "compile", "execute", "data"}, *col[4] = {"#ff7f0e", "#d62728", "#1f77b4", "#7f7f7f"};
    double v[4] = {st->trace_s, st->compile_s, st->exec_s, st->data_s}, tot = 0;
    for (int i = 0; i < 4; i++) tot += v[i] > 0 ? v[i] : 0;
    fprintf(f, "<text x='%d' y='%d' font-size='14' font-weight='bold'>where the time went (%.1f s)</text>\n", x, y - 8,
            tot);
    double cx = x;
    for (int i = 0; i < 4; i++) {
        double bw = tot > 0 && v[i] > 0 ? v[i] / tot * w : 0;
        fprintf(f, "<rect x='%.1f' y='%d' width='%.1f' height='%d' fill='%s'/>\n", cx, y, bw, h, col[i]);
        cx += bw;
        fprintf(f, "<rect x='%d' y='%d' width='12' height='12' fill='%s'/>"
                   "<text x='%d' y='%d' font-size='12'>%s %.1f s (%.1f%%)</text>\n",
                x, y + h + 16 + 20 * i, col[i], x + 18, y + h + 26 + 20 * i, name[i], v[i],
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
