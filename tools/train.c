/* `lazytensor train` and `lazytensor eval`. One training step: copy a batch
 * in, trace forward + loss + backward + optimizer update, ONE lt_mark_step,
 * then read the (now materialized) loss. The three phases are timed apart:
 * data (host batch + lt_from_data), trace (the tracing calls), and the
 * mark_step wall time, split by the library's CompileTime into compile and
 * execute. */
#include "batches.h"
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double lr_at(const cli_opts *o, int64_t step, int64_t total) {
    double f = (double)step / (double)(total > 0 ? total : 1);
    if (!strcmp(o->lr_schedule, "step")) return o->lr * (f >= 0.75 ? 0.01 : f >= 0.5 ? 0.1 : 1);
    if (!strcmp(o->lr_schedule, "cosine")) return o->lr * 0.5 * (1 + cos(3.14159265358979323846 * f));
    return o->lr;
}

/* Test accuracy in percent; NAN when there is nothing to evaluate. The
 * batch follows the training batch unless --eval-batch says otherwise;
 * progress goes to `human` (NULL: quiet). */
static double evaluate(cli_net *net, cli_batches *te, const cli_opts *o, FILE *human) {
    if (te->n <= 0) return NAN;
    progress pg;
    progress_init(&pg, human, batches_per_epoch(te), o->log_every);
    double correct = 0;
    int64_t seen = 0, world = lt_dist_world_size();
    for (int64_t b = 0;; b++) { /* several ranks: this rank's part (batches_shard) */
        lt_tensor *x, *y;
        int64_t rows = interrupted() ? 0 : batches_next(te, 0, b, &x, &y);
        if (rows <= 0) break;
        lt_tensor *lg = net_logits(net, x), *am = lt_argmax(lg, 1, false), *eq = lt_eq(am, y);
        lt_tensor *s = lt_sum(eq, 0, NULL, false);
        correct += lt_item(s);
        lt_free(x), lt_free(y), lt_free(lg), lt_free(am), lt_free(eq), lt_free(s);
        progress_eval(&pg, b + 1, seen += rows);
    }
    progress_done(&pg);
    if (world > 1) { /* every rank reaches this all-reduce once, whatever its number of batches */
        double v[2] = {correct, (double)seen};
        lt_tensor *c = lt_from_data(v, LT_F64, 1, (int64_t[]){2});
        if (!lt_all_reduce_(c, LT_REDUCE_SUM) || lt_to_host(c, v, sizeof v)) v[0] = NAN;
        lt_free(c);
        correct = v[0], seen = (int64_t)v[1];
    }
    return lt_error() || interrupted() ? NAN : 100.0 * correct / (double)seen;
}

void stats_free(run_stats *st) {
    free(st->loss);
    free(st->hist);
    free(st->acc);
    free(st->acc_step);
    memset(st, 0, sizeof *st);
}

/* Steps first_step..total-1, each epoch's end evaluated; stops early, with
 * st->interrupted, when a signal arrived. */
static int train_loop(const cli_opts *o, cli_net *net, cli_batches *tr, cli_batches *te, run_stats *st,
                      FILE *human, int64_t total) {
    int64_t nb = batches_per_epoch(tr), start = st->first_step;
    int64_t n = total - start, nevals = st->nacc + n / nb + 2;
    st->steps_per_epoch = nb;
    st->loss = calloc((size_t)n + 1, sizeof *st->loss);
    double *accs = realloc(st->acc, (size_t)nevals * sizeof *accs); /* after the checkpoint's evaluations */
    if (accs) st->acc = accs;
    int64_t *acc_steps = realloc(st->acc_step, (size_t)nevals * sizeof *acc_steps);
    if (acc_steps) st->acc_step = acc_steps;
    if (!st->loss || !accs || !acc_steps) return -1;
    progress pg;
    progress_init(&pg, human ? stderr : NULL, total, o->log_every);
    double t_run = cli_now(), mark_s = 0, comp_s = 0, exposed0 = lt_metric("CommExposedTime");
    double wire0 = lt_metric("CommWireBytes");
    int rc = 0;
    for (int64_t step = start; step < total; step++) {
        if (interrupted()) {
            st->interrupted = true;
            break;
        }
        int64_t epoch = step / nb, b = step % nb;
        double t0 = cli_now();
        lt_tensor *x, *y;
        int64_t rows = batches_next(tr, epoch, b, &x, &y);
        double t1 = cli_now();
        lt_tensor *loss = rows > 0 ? net_step(net, x, y, lr_at(o, step, total)) : NULL;
        if (!loss) { /* nothing to run: a failed trace is not worth a sync */
            fprintf(stderr, "\nlazytensor: step %lld: %s\n", (long long)step, lt_error_message());
            lt_free(x), lt_free(y);
            rc = -1;
            break;
        }
        double t2 = cli_now(), c0 = lt_metric("CompileTime");
        lt_mark_step();
        double t3 = cli_now(), dc = lt_metric("CompileTime") - c0;
        double lv = lt_item(loss); /* materialized by the mark_step: no second sync */
        lt_free(x), lt_free(y), lt_free(loss);
        if (lt_error()) {
            fprintf(stderr, "\nlazytensor: step %lld: %s\n", (long long)step, lt_error_message());
            rc = -1;
            break;
        }
        st->data_s += t1 - t0;
        st->trace_s += t2 - t1;
        mark_s += t3 - t2;
        comp_s += dc;
        st->loss[st->steps++] = lv;
        double el = st->data_s + st->trace_s + mark_s, per = (cli_now() - t_run) / (double)st->steps;
        progress_update(&pg, step + 1, lv, (double)(st->steps * tr->batch * st->world) / el, (t2 - t1) * 1e3,
                        (t3 - t2 - dc) * 1e3, per * (double)(total - step - 1));
        if (o->save && o->save_every > 0 && (step + 1) % o->save_every == 0 && step + 1 < total &&
            net_save(net, o, o->save, st)) { /* rank 0 writes PATH.tmp, then renames it */
            rc = -1;
            break;
        }
        if (b == nb - 1 || step + 1 == total) { /* end of an epoch, or of the run */
            progress_done(&pg);
            double acc = evaluate(net, te, o, human ? stderr : NULL);
            if (!isnan(acc)) {
                st->acc[st->nacc] = acc;
                st->acc_step[st->nacc++] = step + 1;
                progress_done(&pg);
                if (human)
                    fprintf(human, "epoch %lld: step %lld, loss %.4f, test accuracy %.2f%%\n",
                            (long long)epoch + 1, (long long)step + 1, lv, acc);
            }
        }
    }
    progress_done(&pg);
    /* wall time of the training steps alone (evaluation excluded) */
    st->wall_s = st->data_s + st->trace_s + mark_s;
    st->mark_s = mark_s;
    st->compile_s = comp_s;
    st->exec_s = mark_s - comp_s;
    st->batch = tr->batch;
    batches_stats(tr, &st->images_skipped, &st->images_decoded);
    st->comm_exposed_s = lt_metric("CommExposedTime") - exposed0;
    st->comm_wire_bytes = lt_metric("CommWireBytes") - wire0;
    return rc;
}

/* The end of a run, finished or interrupted: the checkpoint, the summary, the
 * report and the plot, each attempted even when another failed; the exit
 * status names the first that failed. */
static int finish(const cli_opts *o, cli_net *net, run_stats *st, FILE *human) {
    st->first_loss = st->steps ? st->loss[0] : NAN;
    st->final_loss = st->steps ? st->loss[st->steps - 1] : NAN;
    st->test_acc = st->nacc ? st->acc[st->nacc - 1] : NAN;
    st->uncached = lt_metric("UncachedCompile");
    st->cached = lt_metric("CachedCompile");
    st->peak_bytes = lt_metric("PeakBytes");
    st->optim_state_bytes = net_optim_state_bytes(net);
    int rc = CLI_OK;
    int64_t step = st->first_step + st->steps;
    char dflt[160];
    const char *save = o->save;
    if (!save && st->interrupted && st->steps) { /* the run so far is not lost: a named file in the cwd */
        snprintf(dflt, sizeof dflt, "lazytensor-%s-step%lld.safetensors", o->model, (long long)step);
        save = dflt;
    }
    FILE *msg = human ? human : stderr;
    if (save) { /* every rank: a sharded optimizer's state is gathered from all; rank 0 writes */
        if (net_save(net, o, save, st)) rc = CLI_SAVE_FAILED;
        else if (lt_dist_rank() == 0)
            fprintf(msg, "saved checkpoint %s at step %lld (continue with --resume %s)\n", save, (long long)step, save);
    }
    if (lt_dist_rank() != 0) return st->interrupted ? CLI_INTERRUPTED : rc; /* only rank 0 writes */
    if (human) report_table(human, st);
    if (o->report) {
        report_json(stdout, st);
        if (fflush(stdout) || ferror(stdout)) {
            fprintf(stderr, "lazytensor: --report %s: writing to stdout failed\n", o->report);
            if (!rc) rc = CLI_OUTPUT_FAILED;
        }
    }
    if (o->plot && plot_svg(o->plot, st) && !rc) rc = CLI_OUTPUT_FAILED;
    return st->interrupted ? CLI_INTERRUPTED : rc;
}

/* A resumed run must have steps left: --steps and --epochs count from the
 * start of training, not from the checkpoint. */
static int check_steps_left(const cli_opts *o, int64_t first_step, int64_t nb, int64_t total) {
    if (total > first_step) return 0;
    if (o->steps)
        fprintf(stderr, "lazytensor: --steps %lld: %s is already at step %lld, nothing to train (--steps counts "
                        "from the start of training: use --steps N with N > %lld)\n",
                (long long)o->steps, o->resume, (long long)first_step, (long long)first_step);
    else
        fprintf(stderr, "lazytensor: --epochs %d (%lld steps of batch %lld): %s is already at step %lld, nothing to "
                        "train (use more --epochs, or --steps N with N > %lld)\n",
                o->epochs, (long long)(nb * o->epochs), (long long)o->batch_size, o->resume, (long long)first_step,
                (long long)first_step);
    return -1;
}

int cmd_train(const cli_opts *o, run_stats *out) {
    FILE *human = o->quiet ? NULL : o->report ? stderr : stdout; /* stdout carries only the JSON then */
    int world = lt_dist_world_size();
    if (lt_dist_rank() != 0) human = NULL; /* several ranks: rank 0 speaks for all */
    if (o->save_every < 0 || (o->save_every > 0 && !o->save)) {
        fprintf(stderr, "lazytensor: --save-every %lld needs --save PATH (the file it rewrites) and N >= 1\n",
                (long long)o->save_every);
        return CLI_USAGE;
    }
    lt_dist_set_sync_bn(o->sync_bn);
    if (o->shard_optimizer && strcmp(o->grad_compress, "none")) {
        fprintf(stderr, "lazytensor: --grad-compress %s compresses the gradients' all-reduce, which --shard-optimizer "
                        "replaces with a reduce-scatter: use one or the other\n", o->grad_compress);
        return CLI_USAGE;
    }
    lt_dist_set_grad_compress(strcmp(o->grad_compress, "bf16") ? LT_GRAD_COMPRESS_NONE : LT_GRAD_COMPRESS_BF16);
    lt_dist_set_shard_optimizer(o->shard_optimizer); /* before the optimizer is made */
    cli_batches tr, te;
    run_stats st = {.world = world, .shard_optimizer = o->shard_optimizer};
    if (!strcmp(o->data, "text")) { /* a GPT on bytes: tools/text.c */
        cli_net *net = NULL;
        st.model = o->model, st.data = o->data, st.optimizer = o->optimizer, st.precision = o->precision;
        int rc = cmd_train_text(o, &st, human, &net);
        if (!rc) rc = finish(o, net, &st, human);
        net_free(net);
        if (out && !rc) *out = st;
        else stats_free(&st);
        return rc;
    }
    if (batches_open(&tr, o, true)) return CLI_FAILED;
    if (batches_open(&te, o, false)) return batches_close(&tr), CLI_FAILED;
    if (batches_shard(&tr, lt_dist_rank(), world) || batches_shard(&te, lt_dist_rank(), world)) {
        batches_close(&tr), batches_close(&te);
        return CLI_USAGE;
    }
    int rc = CLI_OK;
    if (o->batch_size > tr.n / world) {
        fprintf(stderr, "lazytensor: --batch-size %lld is larger than the training set (%lld images%s)\n",
                (long long)o->batch_size, (long long)(tr.n / world), world > 1 ? " per process" : "");
        rc = CLI_USAGE;
    }
    lt_manual_seed(o->seed);
    cli_net *net = rc ? NULL : net_create(o, tr.c, tr.hw, tr.classes);
    if (!rc && !net) rc = CLI_FAILED;
    if (!rc && o->resume) {
        int r = net_load(net, o, o->resume, &st);
        if (r) rc = r == -2 ? CLI_USAGE : CLI_FAILED;
    }
    if (!rc && net_start(net)) { /* every rank starts from rank 0's weights */
        fprintf(stderr, "lazytensor: materializing the initial weights: %s\n", lt_error_message());
        rc = CLI_FAILED;
    }
    int64_t nb = batches_per_epoch(&tr), total = o->steps ? o->steps : nb * o->epochs;
    if (!rc && check_steps_left(o, st.first_step, nb, total)) rc = CLI_USAGE;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (!rc && !strcmp(o->precision, "bf16") && !__builtin_cpu_supports("avx512bf16"))
        fprintf(stderr, "lazytensor: warning: this CPU has no AVX512-BF16 instructions; --precision bf16 gives the "
                        "same results but runs emulated, slower than fp32\n");
#endif
    if (!rc && human) {
        fprintf(human, "training %s on %s: %lld images %dx%dx%d, batch %lld, %s lr %g, %s\n", net_describe(net),
                o->data, (long long)tr.n, tr.c, tr.hw, tr.hw, (long long)o->batch_size, o->optimizer, o->lr, o->precision);
        if (world > 1)
            fprintf(human, "%d processes x batch %lld = global batch %lld%s\n", world, (long long)o->batch_size,
                    (long long)o->batch_size * world, o->sync_bn ? ", batch norm synchronized" : "");
        if (st.first_step) fprintf(human, "resumed from %s at step %lld\n", o->resume, (long long)st.first_step);
    }
    if (!rc) {
        st.model = o->model, st.data = o->data, st.optimizer = o->optimizer, st.precision = o->precision;
        if (train_loop(o, net, &tr, &te, &st, human, total)) rc = CLI_FAILED;
        else rc = finish(o, net, &st, human);
    }
    net_free(net);
    batches_close(&tr);
    batches_close(&te);
    if (out && !rc) *out = st;
    else stats_free(&st);
    return rc;
}

int cmd_eval(const cli_opts *o) {
    if (!o->resume) {
        fprintf(stderr, "lazytensor: eval needs --resume PATH (a checkpoint written by train --save)\n");
        return CLI_USAGE;
    }
    cli_batches te;
    if (batches_open(&te, o, false)) return CLI_FAILED;
    if (batches_shard(&te, lt_dist_rank(), lt_dist_world_size())) return batches_close(&te), CLI_USAGE;
    cli_net *net = net_create(o, te.c, te.hw, te.classes);
    run_stats ck = {0};
    int r = net ? net_load(net, o, o->resume, &ck) : -1;
    int rc = r == -2 ? CLI_USAGE : r ? CLI_FAILED : CLI_OK;
    int64_t step = ck.first_step;
    stats_free(&ck);
    if (!rc) {
        int quiet = lt_dist_rank() != 0; /* several ranks: rank 0 speaks for all */
        double t0 = cli_now(), acc = evaluate(net, &te, o, o->report || quiet ? NULL : stderr);
        if (isnan(acc)) {
            fprintf(stderr, "lazytensor: evaluation failed: %s\n", lt_error() ? lt_error_message() : "no test images");
            rc = CLI_FAILED;
        } else if (!quiet && o->report) {
            printf("{\"step\": %lld, \"test_images\": %lld, \"test_accuracy\": %.4f, \"eval_s\": %.3f}\n",
                   (long long)step, (long long)te.n, acc, cli_now() - t0);
        } else if (!quiet) {
            printf("%s at step %lld: test accuracy %.2f%% on %lld images (%.1f s)\n", o->resume, (long long)step,
                   acc, (long long)te.n, cli_now() - t0);
        }
    }
    net_free(net);
    batches_close(&te);
    return rc;
}
