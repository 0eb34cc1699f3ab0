/* Progress: on a terminal one line rewritten in place (at most ~10 times a
 * second, so printing never shows up in the step time); otherwise a plain
 * line every `every` steps, which reads well in CI logs. */
#include "cli.h"

#include <unistd.h>

void progress_init(progress *p, FILE *f, int64_t total, int64_t every) {
    p->f = f;
    p->tty = f && isatty(fileno(f));
    p->total = total;
    p->every = every > 0 ? every : 50;
    p->t_start = p->t_last = cli_now();
    p->last_len = 0;
}

static void fmt_eta(char *buf, size_t n, double s) {
    if (s < 0 || s != s) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

/* Whether step `step` prints: on a terminal at most every 0.1 s, otherwise
 * the first, the last and every p->every-th. */
static bool due(progress *p, int64_t step) {
    if (!p->f) return false; /* quiet */
    double now = cli_now();
    bool last = step == p->total;
    if (p->tty) {
        if (!last && now - p->t_last < 0.1 && step > 1) return false;
        p->t_last = now;
        return true;
    }
    return step == 1 || last || step % p->every == 0;
}

void progress_update(progress *p, int64_t step, double loss, double img_s, double trace_ms, double exec_ms,
                     double eta_s) {
    if (!due(p, step)) return;
    char eta[32];
    fmt_eta(eta, sizeof eta, eta_s);
    if (p->tty) {
        p->last_len = fprintf(p->f, "\rstep %lld/%lld  loss %.4f  %.0f img/s  trace %.2f ms  execute %.1f ms  ETA %s ",
                              (long long)step, (long long)p->total, loss, img_s, trace_ms, exec_ms, eta);
        fflush(p->f);
    } else {
        fprintf(p->f, "step %lld/%lld loss %.4f img/s %.0f trace_ms %.2f execute_ms %.1f eta %s\n", (long long)step,
                (long long)p->total, loss, img_s, trace_ms, exec_ms, eta);
        fflush(p->f);
    }
}

void progress_eval(progress *p, int64_t b, int64_t images) {
    if (!due(p, b)) return;
    double el = cli_now() - p->t_start;
    char eta[32];
    fmt_eta(eta, sizeof eta, el / (double)b * (double)(p->total - b));
    if (p->tty) {
        p->last_len = fprintf(p->f, "\revaluating: batch %lld/%lld  %.0f img/s  ETA %s ", (long long)b,
                              (long long)p->total, el > 0 ? (double)images / el : 0, eta);
        fflush(p->f);
    } else {
        fprintf(p->f, "evaluating: batch %lld/%lld img/s %.0f eta %s\n", (long long)b, (long long)p->total,
                el > 0 ? (double)images / el : 0, eta);
        fflush(p->f);
    }
}

/* Ends the in-place line so what follows starts on a fresh one. */
void progress_done(progress *p) {
    if (p->tty && p->last_len) fputc('\n', p->f);
    p->last_len = 0;
}
