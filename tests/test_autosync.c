/* AutoSync: with a small LT_MAX_PENDING_NODES, a loop that never syncs is
 * synced automatically and stays correct. The variable is set before the
 * first lazytensor call, since the environment is read once at init. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200112L /* setenv */
#endif
#include "harness.h"

#include "core/core.h" /* g_arena: to show the pending graph stays bounded */

TEST(autosync_lerp_loop) {
    int64_t s[2] = {2, 3};
    float xv[6] = {0, 1, 2, 3, 4, 5}, gv[6] = {-1, 7, 0.5f, 2, 9, -3}, m[6];
    memcpy(m, xv, sizeof m);
    lt_tensor *x = lt_from_data(xv, LT_F32, 2, s), *g = lt_from_data(gv, LT_F32, 2, s);
    double a0 = lt_metric("AutoSync");
    uint64_t max_nodes = 0;
    for (int i = 1; i <= 20000; i++) {
        double w = (i % 5) * 0.0003;
        lt_tensor *nx = lt_lerp(x, g, w);
        lt_free(x);
        x = nx;
        for (int k = 0; k < 6; k++) m[k] = (float)((double)m[k] + w * ((double)gv[k] - m[k]));
        if (g_arena.nodes > max_nodes) max_nodes = g_arena.nodes;
    }
    CHECK_MSG(lt_metric("AutoSync") - a0 > 0, "AutoSync did not trigger");
    CHECK_MSG(max_nodes <= 64 + 4, "pending nodes reached %llu with LT_MAX_PENDING_NODES=64",
              (unsigned long long)max_nodes);
    double e[6];
    for (int k = 0; k < 6; k++) e[k] = m[k];
    h_expect(__FILE__, __LINE__, x, e, 6, 1e-5);
    lt_free(x);
    lt_free(g);
}

/* In-place ops through views across automatic syncs: the views regenerate
 * from the synced base. */
TEST(autosync_views) {
    int64_t s[2] = {4, 5};
    float v[20], m[20];
    for (int i = 0; i < 20; i++) v[i] = m[i] = (float)i * 0.25f;
    lt_tensor *a = lt_from_data(v, LT_F32, 2, s);
    lt_tensor *row = lt_select(a, 0, 1), *col = lt_select(a, 1, 3), *tr = lt_transpose(a, 0, 1);
    double a0 = lt_metric("AutoSync");
    for (int i = 0; i < 3000; i++) {
        lt_add_scalar_(row, 0.5);                  /* a[1, :] += 0.5 */
        lt_mul_scalar_(col, 0.75);                 /* a[:, 3] *= 0.75 */
        lt_tensor *t0 = lt_select(tr, 0, i % 5);   /* a[:, i % 5] through the transpose */
        lt_clamp_(t0, -100, 100);
        lt_free(t0);
        for (int c = 0; c < 5; c++) m[5 + c] = (float)((double)m[5 + c] + 0.5);
        for (int r = 0; r < 4; r++) m[r * 5 + 3] = (float)((double)m[r * 5 + 3] * 0.75);
        for (int r = 0; r < 4; r++) {
            float *p = &m[r * 5 + i % 5];
            *p = *p < -100 ? -100 : *p > 100 ? 100 : *p;
        }
    }
    CHECK(lt_metric("AutoSync") - a0 > 0);
    double e[20];
    for (int i = 0; i < 20; i++) e[i] = m[i];
    h_expect(__FILE__, __LINE__, a, e, 20, 0);
    double ec[4] = {m[3], m[8], m[13], m[18]};
    h_expect(__FILE__, __LINE__, col, ec, 4, 0);
    lt_free(row);
    lt_free(col);
    lt_free(tr);
    lt_free(a);
}

int main(void) {
    setenv("LT_MAX_PENDING_NODES", "64", 1);
    setenv("LT_EAGER", "0", 1); /* eager mode syncs every op: nothing would be left to auto-sync */
    RUN(autosync_lerp_loop);
    RUN(autosync_views);
    return h_report();
}
