/* `lazytensor train --model gpt --data text` and `lazytensor sample`: a GPT
 * on byte-level text. Training draws random windows of --block-size bytes
 * (a pure function of seed and step, so --resume continues the same
 * stream), reports the validation loss on the held-out last tenth next to
 * the unigram baseline, and the loss curve goes to --plot like any run.
 * Sampling feeds a fixed (1, block_size) window, the context left-aligned:
 * attention is causal, so the positions after the context change nothing,
 * and every token reuses the one compiled graph. */
#include "net.h"

#include "data/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

lt_gpt_config cli_gpt_config(const cli_opts *o) {
    lt_gpt_config c = {o->n_layer, o->n_head, o->n_embd, o->block_size, 256, 0.0};
    return c;
}

static int load_text(const cli_opts *o, data_text *t) {
    const char *path = o->data_file ? o->data_file : DATA_TEXT_DEFAULT;
    if (data_text_load(t, path) == 0) return 0;
    fprintf(stderr, "lazytensor: %s\n", lt_error_message());
    if (!o->data_file)
        fprintf(stderr, "lazytensor: the default corpus comes from the Debian package: apt-get install fortunes\n"
                        "or give a text file with --data-file FILE\n");
    return -1;
}

/* Mean loss over `batches` validation batches, in eval mode. */
static double val_loss(cli_net *net, const data_text *t, const cli_opts *o, int batches, int64_t *xb, int64_t *yb) {
    int64_t shape[2] = {o->batch_size, o->block_size};
    double s = 0;
    for (int k = 0; k < batches; k++) {
        if (data_text_batch(t, 1, shape[0], shape[1], o->seed, k, xb, yb)) return NAN;
        lt_tensor *x = lt_from_data(xb, LT_I64, 2, shape), *y = lt_from_data(yb, LT_I64, 2, shape);
        lt_tensor *l = net_eval_loss(net, x, y);
        s += lt_item(l);
        lt_free(x), lt_free(y), lt_free(l);
    }
    return lt_error() ? NAN : s / batches;
}

int cmd_train_text(const cli_opts *o, run_stats *st, FILE *human, cli_net **netp) {
    data_text t;
    *netp = NULL;
    if (strcmp(o->model, "gpt")) {
        fprintf(stderr, "lazytensor: --data text trains --model gpt\n");
        return CLI_USAGE;
    }
    if (load_text(o, &t)) return CLI_USAGE;
    int64_t B = o->batch_size, T = o->block_size, shape[2] = {B, T}, total = o->steps ? o->steps : 2000;
    int64_t every = o->eval_every ? o->eval_every : 250;
    int64_t *xb = malloc(sizeof *xb * (size_t)(B * T)), *yb = malloc(sizeof *yb * (size_t)(B * T));
    double unigram = data_text_unigram_loss(&t);
    lt_manual_seed(o->seed);
    cli_net *net = *netp = xb && yb ? net_create(o, 1, 0, 256) : NULL;
    int rc = net ? CLI_OK : CLI_FAILED;
    if (!rc && o->resume) {
        int r = net_load(net, o, o->resume, st);
        if (r) rc = r == -2 ? CLI_USAGE : CLI_FAILED;
    }
    if (!rc && net_start(net)) {
        fprintf(stderr, "lazytensor: materializing the initial weights: %s\n", lt_error_message());
        rc = CLI_FAILED;
    }
    int64_t start = st->first_step, n = total > start ? total - start : 0;
    if (!rc && !(st->loss = calloc((size_t)n + 1, sizeof *st->loss))) rc = CLI_FAILED;
    if (!rc && human)
        fprintf(human, "training %s on %s: %lld bytes (%lld held out), block %lld, batch %lld, %s lr %g; "
                       "unigram validation loss %.4f\n",
                net_describe(net), o->data_file ? o->data_file : DATA_TEXT_DEFAULT, (long long)t.n,
                (long long)(t.n - t.n_train), (long long)T, (long long)B, o->optimizer, o->lr, unigram);
    progress pg;
    progress_init(&pg, human ? stderr : NULL, total, o->log_every);
    double t_run = cli_now(), mark_s = 0, comp_s = 0, vl = NAN;
    double exposed0 = lt_metric("CommExposedTime"), wire0 = lt_metric("CommWireBytes");
    for (int64_t step = start; !rc && step < total; step++) {
        if (interrupted()) { /* the caller saves what was trained so far */
            st->interrupted = true;
            break;
        }
        double t0 = cli_now();
        if (data_text_batch(&t, 0, B, T, o->seed, step, xb, yb)) {
            fprintf(stderr, "lazytensor: %s\n", lt_error_message());
            rc = CLI_USAGE;
            break;
        }
        lt_tensor *x = lt_from_data(xb, LT_I64, 2, shape), *y = lt_from_data(yb, LT_I64, 2, shape);
        double t1 = cli_now();
        lt_tensor *loss = net_step(net, x, y, lr_at(o, step, total));
        double t2 = cli_now(), c0 = lt_metric("CompileTime");
        lt_mark_step();
        double t3 = cli_now(), dc = lt_metric("CompileTime") - c0, lv = loss ? lt_item(loss) : NAN;
        lt_free(x), lt_free(y), lt_free(loss);
        if (!loss || lt_error()) {
            fprintf(stderr, "\nlazytensor: step %lld: %s\n", (long long)step, lt_error_message());
            rc = CLI_FAILED;
            break;
        }
        st->data_s += t1 - t0, st->trace_s += t2 - t1, mark_s += t3 - t2, comp_s += dc;
        st->loss[st->steps++] = lv;
        double el = st->data_s + st->trace_s + mark_s, per = (cli_now() - t_run) / (double)st->steps;
        progress_update(&pg, step + 1, lv, (double)(st->steps * B * T) / el, (t2 - t1) * 1e3, (t3 - t2 - dc) * 1e3,
                        per * (double)(total - step - 1));
        if (o->save && o->save_every > 0 && (step + 1) % o->save_every == 0 && step + 1 < total &&
            net_save(net, o, o->save, st)) { /* rank 0 writes PATH.tmp, then renames it */
            rc = CLI_SAVE_FAILED;
            break;
        }
        if ((step + 1) % every == 0 || step + 1 == total) {
            progress_done(&pg);
            vl = val_loss(net, &t, o, 4, xb, yb);
            if (human)
                fprintf(human, "step %lld: train loss %.4f, validation loss %.4f (unigram %.4f)\n",
                        (long long)step + 1, lv, vl, unigram);
        }
    }
    progress_done(&pg);
    st->wall_s = st->data_s + st->trace_s + mark_s, st->mark_s = mark_s, st->compile_s = comp_s;
    st->exec_s = mark_s - comp_s, st->batch = B;
    st->comm_exposed_s = lt_metric("CommExposedTime") - exposed0;
    st->comm_wire_bytes = lt_metric("CommWireBytes") - wire0;
    st->test_acc = NAN; /* no accuracy for a language model */
    if (!rc && human && !isnan(vl))
        fprintf(human, "validation loss %.4f nats/byte %s the unigram model's %.4f\n", vl,
                vl < unigram ? "beats" : "does NOT beat", unigram);
    free(xb), free(yb);
    data_text_free(&t);
    return rc;
}

/* Top-k, temperature sampling from the logits of one position (host). */
static int sample_byte(const float *lg, double temp, int top_k, uint64_t *rng) {
    double p[256], mx = -INFINITY, s = 0;
    for (int c = 0; c < 256; c++) mx = lg[c] > mx ? lg[c] : mx;
    double kth = -INFINITY; /* the k-th largest logit: below it, probability 0 */
    if (top_k > 0 && top_k < 256) {
        float v[256];
        memcpy(v, lg, sizeof v);
        for (int i = 0; i < top_k; i++) { /* partial selection: k is small */
            int best = i;
            for (int j = i + 1; j < 256; j++) best = v[j] > v[best] ? j : best;
            float tmp = v[i];
            v[i] = v[best], v[best] = tmp;
        }
        kth = v[top_k - 1];
    }
    for (int c = 0; c < 256; c++) s += p[c] = lg[c] < kth ? 0 : exp((lg[c] - mx) / temp);
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*rng >> 11) * 0x1.0p-53 * s;
    int last = 0;
    for (int c = 0; c < 256; c++) {
        if (p[c] > 0) last = c;
        if ((u -= p[c]) < 0) return c;
    }
    return last; /* rounding left u just above 0 */
}

int cmd_sample(const cli_opts *o) {
    if (!o->resume) {
        fprintf(stderr, "lazytensor: sample needs --resume CKPT (written by train --model gpt --data text --save)\n");
        return CLI_USAGE;
    }
    if (o->temperature <= 0) {
        fprintf(stderr, "lazytensor: --temperature must be > 0\n");
        return CLI_USAGE;
    }
    cli_opts g = *o;
    g.model = "gpt";
    cli_net *net = net_create(&g, 1, 0, 256);
    run_stats st = {0};
    int64_t T = o->block_size;
    if (!net || net_load(net, &g, o->resume, &st)) {
        net_free(net);
        stats_free(&st);
        return CLI_FAILED;
    }
    stats_free(&st);
    const char *prompt = o->prompt ? o->prompt : "\n";
    int64_t len = (int64_t)strlen(prompt), cap = len + o->tokens + 1;
    uint8_t *ctx = malloc((size_t)cap);
    int64_t *win = calloc((size_t)T, sizeof *win), shape[2] = {1, T};
    uint64_t rng = o->seed * 0x9E3779B97F4A7C15ull + 1;
    int rc = ctx && win ? CLI_OK : CLI_FAILED;
    if (!rc) memcpy(ctx, prompt, (size_t)len);
    fputs(prompt, stdout);
    for (int64_t i = 0; !rc && i < o->tokens; i++) {
        int64_t n = len < T ? len : T, off = len - n;
        for (int64_t k = 0; k < T; k++) win[k] = k < n ? ctx[off + k] : 0;
        lt_tensor *x = lt_from_data(win, LT_I64, 2, shape), *lg = net_logits(net, x);
        lt_tensor *last = lt_select(lg, 1, n - 1), *f = lt_to_dtype(last, LT_F32);
        float v[256];
        if (!f || lt_to_host(f, v, sizeof v)) {
            fprintf(stderr, "\nlazytensor: %s\n", lt_error_message());
            rc = CLI_FAILED;
        } else {
            ctx[len++] = (uint8_t)sample_byte(v, o->temperature, o->top_k, &rng);
            fputc(ctx[len - 1], stdout);
            fflush(stdout);
        }
        lt_free(x), lt_free(lg), lt_free(last), lt_free(f);
    }
    fputc('\n', stdout);
    free(ctx), free(win);
    net_free(net);
    return rc;
}
