/* The end of a run: one JSON object (--report json) for scripts, and a
 * summary table for people. JSON numbers must be finite, so NaN (no
 * evaluation, no metric yet) is written as null. */
#include "cli.h"

#include <math.h>

static void num(FILE *f, const char *key, double v, const char *sep) {
    if (isfinite(v)) fprintf(f, "\"%s\": %.6g%s", key, v, sep);
    else fprintf(f, "\"%s\": null%s", key, sep);
}

/* Counts and byte sizes: whole numbers, written without an exponent. */
static void count(FILE *f, const char *key, double v, const char *sep) {
    if (isfinite(v)) fprintf(f, "\"%s\": %.0f%s", key, v, sep);
    else fprintf(f, "\"%s\": null%s", key, sep);
}

static double per_step(double s, int64_t steps) { return steps ? s * 1e3 / (double)steps : NAN; }

void report_json(FILE *f, const run_stats *st) {
    fprintf(f, "{\"model\": \"%s\", \"data\": \"%s\", \"optimizer\": \"%s\", \"precision\": \"%s\", ", st->model,
            st->data, st->optimizer, st->precision);
    fprintf(f, "\"steps\": %lld, \"first_step\": %lld, \"batch_size\": %lld, ", (long long)st->steps,
            (long long)st->first_step, (long long)st->batch);
    int64_t world = st->world > 0 ? st->world : 1;
    fprintf(f, "\"world_size\": %lld, \"global_batch\": %lld, ", (long long)world, (long long)(st->batch * world));
    num(f, "images_per_sec", st->wall_s > 0 ? (double)(st->steps * st->batch * world) / st->wall_s : NAN, ", ");
    num(f, "comm_exposed_ms_per_step", per_step(st->comm_exposed_s, st->steps), ", ");
    count(f, "bytes_on_wire_per_step", st->steps ? st->comm_wire_bytes / (double)st->steps : NAN, ", ");
    num(f, "trace_ms_per_step", per_step(st->trace_s, st->steps), ", ");
    num(f, "compile_ms_total", st->compile_s * 1e3, ", ");
    num(f, "execute_ms_per_step", per_step(st->exec_s, st->steps), ", ");
    num(f, "data_ms_per_step", per_step(st->data_s, st->steps), ", ");
    /* the step waited on its batch: data_s is the wait plus the copy in */
    num(f, "data_wait_ms_per_step", per_step(st->data_s, st->steps), ", ");
    num(f, "data_wait_fraction", st->wall_s > 0 ? st->data_s / st->wall_s : NAN, ", ");
    num(f, "decode_images_per_sec", st->images_decoded && st->wall_s > 0 ? (double)st->images_decoded / st->wall_s : NAN,
        ", ");
    fprintf(f, "\"images_skipped\": %lld, ", (long long)st->images_skipped);
    count(f, "uncached_compiles", st->uncached, ", ");
    count(f, "cached_compiles", st->cached, ", ");
    num(f, "first_loss", st->first_loss, ", ");
    num(f, "final_loss", st->final_loss, ", ");
    num(f, "test_accuracy", st->test_acc, ", ");
    count(f, "peak_bytes", st->peak_bytes, ", ");
    fprintf(f, "\"shard_optimizer\": %s, ", st->shard_optimizer ? "true" : "false");
    count(f, "optimizer_state_bytes_per_rank", st->optim_state_bytes, ", ");
    fprintf(f, "\"interrupted\": %s, ", st->interrupted ? "true" : "false");
    fprintf(f, "\"losses\": [");
    for (int64_t i = 0; i < st->steps; i++) {
        if (isfinite(st->loss[i])) fprintf(f, "%s%.9g", i ? ", " : "", st->loss[i]);
        else fprintf(f, "%snull", i ? ", " : "");
    }
    fprintf(f, "]}\n");
    fflush(f);
}

static void row(FILE *f, const char *what, double ms, double total) {
    fprintf(f, "  %-22s %12.1f ms  %5.1f%%\n", what, ms, total > 0 ? 100 * ms / total : 0);
}

void report_table(FILE *f, const run_stats *st) {
    double total = st->wall_s * 1e3;
    fprintf(f, "\n== summary: %s on %s, %lld steps of batch %lld, %s%s\n", st->model, st->data, (long long)st->steps,
            (long long)st->batch, st->precision, st->interrupted ? " (interrupted)" : "");
    if (isfinite(st->test_acc)) fprintf(f, "  %-22s %12.2f %%\n", "test accuracy", st->test_acc);
    if (isfinite(st->final_loss)) fprintf(f, "  %-22s %12.4f\n", "final loss", st->final_loss);
    if (st->wall_s > 0)
        fprintf(f, "  %-22s %12.0f\n", "images/s", (double)(st->steps * st->batch * (st->world > 0 ? st->world : 1)) / st->wall_s);
    fprintf(f, "  time split (training steps):\n");
    row(f, "data", st->data_s * 1e3, total);
    row(f, "trace", st->trace_s * 1e3, total);
    row(f, "compile", st->compile_s * 1e3, total);
    row(f, "execute", st->exec_s * 1e3, total);
    if (st->steps)
        fprintf(f, "  %-22s %12.3f ms/step\n  %-22s %12.1f ms/step\n", "trace", per_step(st->trace_s, st->steps),
                "execute", per_step(st->exec_s, st->steps));
    fprintf(f, "  %-22s %12.0f hits, %.0f misses\n", "compile cache", st->cached, st->uncached);
    if (st->images_decoded)
        fprintf(f, "  %-22s %12.0f img/s decoded, %lld bad files skipped\n", "image folder",
                st->wall_s > 0 ? (double)st->images_decoded / st->wall_s : 0, (long long)st->images_skipped);
    if (st->world > 1)
        fprintf(f, "  %-22s %12d x batch %lld = %lld, waited on communication %.1f ms/step\n", "processes", st->world,
                (long long)st->batch, (long long)st->batch * st->world, per_step(st->comm_exposed_s, st->steps));
    if (st->world > 1 && st->steps)
        fprintf(f, "  %-22s %12.2f MB/step sent by each process (estimate)\n", "on the wire",
                st->comm_wire_bytes / (double)st->steps / 1e6);
    if (st->optim_state_bytes > 0)
        fprintf(f, "  %-22s %12.1f MiB per process%s\n", "optimizer state", st->optim_state_bytes / (1024.0 * 1024.0),
                st->shard_optimizer && st->world > 1 ? " (sharded)" : "");
    if (isfinite(st->peak_bytes) && st->peak_bytes > 0)
        fprintf(f, "  %-22s %12.1f MiB\n", "peak memory", st->peak_bytes / (1024.0 * 1024.0));
    fflush(f);
}
