/* GPT-2 (the nanoGPT layout): token and learned position embeddings,
 * pre-norm blocks (x + attn(ln_1(x)), x + mlp(ln_2(x))) with causal
 * attention and a tanh-free GELU MLP, a final layer norm, and an output
 * projection tied to the token embedding. GPT-2's initialization: every
 * weight N(0, 0.02), the residual projections (c_proj) N(0, 0.02 /
 * sqrt(2 n_layer)), biases 0, layer norms 1 and 0. Names are nanoGPT's
 * state_dict names; the tied weight is listed once, as
 * transformer.wte.weight (nanoGPT's lm_head.weight is the same tensor). */
#include "nn.h"

#include "../core/core.h"

#include <math.h>

static int ln_init(nn_layer_norm *l, nn_registry *r, const char *name, int64_t n) {
    l->eps = 1e-5;
    return nn_register(r, name, "weight", l->weight = nn_const(LT_F32, 1, &n, 1), true) ||
                   nn_register(r, name, "bias", l->bias = nn_const(LT_F32, 1, &n, 0), true)
               ? -1
               : 0;
}

static lt_tensor *ln_forward(nn_layer_norm *l, lt_tensor *x) { return lt_layer_norm(x, 1, l->weight, l->bias, l->eps); }

static void ln_free(nn_layer_norm *l) {
    lt_free(l->weight);
    lt_free(l->bias);
}

/* A Linear with GPT-2's initialization: weight N(0, std), bias zeros. */
static int gpt_linear(nn_linear *l, nn_registry *r, const char *name, int64_t in, int64_t out, double std) {
    int64_t ws[2] = {out, in};
    if (nn_register(r, name, "weight", l->weight = nn_normal(2, ws, std), true)) return -1;
    return nn_register(r, name, "bias", l->bias = nn_const(LT_F32, 1, &out, 0), true);
}

int nn_gpt_init(nn_gpt *m, nn_registry *r, const lt_gpt_config *cfg) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    int64_t E = cfg->n_embd, L = cfg->n_layer, ws[2] = {cfg->vocab_size, E}, ps[2] = {cfg->block_size, E};
    double proj_std = 0.02 / sqrt(2.0 * (double)L);
    if (nn_register(r, "transformer.wte", "weight", m->wte = nn_normal(2, ws, 0.02), true) ||
        nn_register(r, "transformer.wpe", "weight", m->wpe = nn_normal(2, ps, 0.02), true))
        return -1;
    if (!(m->blocks = core_calloc((size_t)L, sizeof *m->blocks))) return -1;
    char p[96], q[128];
    for (int64_t i = 0; i < L; i++) {
        nn_gpt_block *b = &m->blocks[i];
        snprintf(p, sizeof p, "transformer.h.%lld", (long long)i);
        if (ln_init(&b->ln_1, r, nn_join(q, sizeof q, p, "ln_1"), E) ||
            gpt_linear(&b->c_attn, r, nn_join(q, sizeof q, p, "attn.c_attn"), E, 3 * E, 0.02) ||
            gpt_linear(&b->attn_proj, r, nn_join(q, sizeof q, p, "attn.c_proj"), E, E, proj_std) ||
            ln_init(&b->ln_2, r, nn_join(q, sizeof q, p, "ln_2"), E) ||
            gpt_linear(&b->c_fc, r, nn_join(q, sizeof q, p, "mlp.c_fc"), E, 4 * E, 0.02) ||
            gpt_linear(&b->mlp_proj, r, nn_join(q, sizeof q, p, "mlp.c_proj"), 4 * E, E, proj_std))
            return -1;
    }
    if (ln_init(&m->ln_f, r, "transformer.ln_f", E)) return -1;
    int64_t *pos = core_malloc((size_t)cfg->block_size * sizeof *pos);
    if (!pos) return -1;
    for (int64_t t = 0; t < cfg->block_size; t++) pos[t] = t;
    m->pos = lt_from_data(pos, LT_I64, 1, &ps[0]);
    core_free(pos);
    return m->pos ? 0 : -1;
}


/* x + dropout(o), taking o. */
static lt_tensor *residual(lt_tensor *x, lt_tensor *o, double p) {
    lt_tensor *od = p > 0 ? lt_dropout(o, p, true) : o;
    if (od != o) lt_free(o);
    lt_tensor *out = lt_add(x, od);
    lt_free(od);
    return out;
}

/* x + attn(ln_1(x)): (B, T, E) -> (B, T, E). Returns a new handle. */
static lt_tensor *attn_forward(nn_gpt *m, nn_gpt_block *b, lt_tensor *x, double p) {
    const int64_t *s = lt_shape(x);
    int64_t B = s[0], T = s[1], E = s[2], H = m->cfg.n_head, hs[4] = {B, T, H, E / H}, bs[3] = {B, T, E};
    lt_tensor *h = ln_forward(&b->ln_1, x), *qkv = nn_linear_forward(&b->c_attn, h), *qkvh[3];
    lt_free(h);
    for (int i = 0; i < 3; i++) { /* (B, T, E) slices -> (B, H, T, D) views */
        lt_tensor *part = lt_narrow(qkv, 2, i * E, E), *r = lt_reshape(part, 4, hs);
        qkvh[i] = lt_transpose(r, 1, 2);
        lt_free(part), lt_free(r);
    }
    lt_tensor *y = lt_scaled_dot_product_attention(qkvh[0], qkvh[1], qkvh[2], true, p, 0);
    lt_free(qkvh[0]), lt_free(qkvh[1]), lt_free(qkvh[2]), lt_free(qkv);
    lt_tensor *yt = lt_transpose(y, 1, 2), *yc = lt_reshape(yt, 3, bs), *o = nn_linear_forward(&b->attn_proj, yc);
    lt_free(y), lt_free(yt), lt_free(yc);
    return residual(x, o, p);
}

/* x + mlp(ln_2(x)). */
static lt_tensor *mlp_forward(nn_gpt_block *b, lt_tensor *x, double p) {
    lt_tensor *h = ln_forward(&b->ln_2, x), *f = nn_linear_forward(&b->c_fc, h), *g = lt_gelu(f, false);
    lt_tensor *o = nn_linear_forward(&b->mlp_proj, g);
    lt_free(h), lt_free(f), lt_free(g);
    return residual(x, o, p);
}

lt_tensor *nn_gpt_forward(nn_gpt *m, lt_tensor *idx, bool training) {
    int64_t T = lt_shape(idx)[1];
    double p = training ? m->cfg.dropout : 0;
    lt_tensor *pos = lt_narrow(m->pos, 0, 0, T), *te = lt_embedding(m->wte, idx), *pe = lt_embedding(m->wpe, pos);
    lt_tensor *x = lt_add(te, pe);
    lt_free(pos), lt_free(te), lt_free(pe);
    if (p > 0) {
        lt_tensor *xd = lt_dropout(x, p, true);
        lt_free(x);
        x = xd;
    }
    for (int64_t i = 0; i < m->cfg.n_layer && x; i++) {
        lt_tensor *a = attn_forward(m, &m->blocks[i], x, p);
        lt_free(x);
        x = mlp_forward(&m->blocks[i], a, p);
        lt_free(a);
    }
    lt_tensor *h = ln_forward(&m->ln_f, x), *logits = lt_linear(h, m->wte, NULL); /* the tied head */
    lt_free(x), lt_free(h);
    return logits;
}

void nn_gpt_free(nn_gpt *m) {
    lt_free(m->wte);
    lt_free(m->wpe);
    lt_free(m->pos);
    for (int64_t i = 0; m->blocks && i < m->cfg.n_layer; i++) {
        nn_gpt_block *b = &m->blocks[i];
        ln_free(&b->ln_1), ln_free(&b->ln_2);
        nn_linear_free(&b->c_attn), nn_linear_free(&b->attn_proj);
        nn_linear_free(&b->c_fc), nn_linear_free(&b->mlp_proj);
    }
    core_free(m->blocks);
    ln_free(&m->ln_f);
    memset(m, 0, sizeof *m);
}
