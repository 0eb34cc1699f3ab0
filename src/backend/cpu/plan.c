/* The memory plan: every materialized value gets a slot; a view that needs
 * no copy shares its operand's slot; a kernel output takes the slot of an
 * input that dies at that kernel when the kernel can write over what it
 * reads (in-place reuse); a dying input parameter becomes the output's
 * *donor*, used at run time when sync says the buffer is donatable. Temp
 * slots are then packed into one arena by liveness, reusing blocks. */
#include "cpu.h"

static size_t value_bytes(const gnode *y) { return (size_t)y->numel * dtype_size((lt_dtype)y->dtype); }

static const slot *g_sort_slots; /* qsort has no context argument in C11 */
static int by_last(const void *a, const void *b) {
    int32_t x = g_sort_slots[*(const int32_t *)a].last, y = g_sort_slots[*(const int32_t *)b].last;
    return (x > y) - (x < y);
}

void cpu_plan_free(plan *p) {
    core_free(p->slots);
    core_free(p->slot_of);
    memset(p, 0, sizeof *p);
}

int cpu_plan(const exec_graph *g, const kernel *k, int nk, plan *p) {
    memset(p, 0, sizeof *p);
    int n = g->n;
    int32_t *lastuse = core_malloc((size_t)(n ? n : 1) * 4);
    p->slot_of = core_malloc((size_t)(n ? n : 1) * 4);
    p->slots = core_calloc((size_t)(n ? n : 1), sizeof *p->slots);
    int rc = -1;
    if (!lastuse || !p->slot_of || !p->slots) goto done;
    for (int v = 0; v < n; v++) {
        p->slot_of[v] = -1;
        lastuse[v] = -1;
    }
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < k[j].nread; i++) lastuse[k[j].read[i]] = j;
    for (int r = 0; r < g->nroots; r++) lastuse[g->roots[r]] = nk; /* outlives the run */
    /* Parameters first: live from before the first kernel. */
    for (int v = 0; v < n; v++) {
        const gnode *y = &g->nodes[v];
        if (y->op != LT_OP_DATA) continue;
        slot *s = &p->slots[p->nslots];
        *s = (slot){.kind = SLOT_PARAM, .param = y->param, .nbytes = value_bytes(y), .def = -1, .last = lastuse[v]};
        p->slot_of[v] = p->nslots++;
    }
    for (int j = 0; j < nk; j++) {
        const kernel *kn = &k[j];
        for (int w = 0; w < kn->nwrite; w++) {
            int32_t v = kn->write[w];
            const gnode *y = &g->nodes[v];
            size_t nb = value_bytes(y);
            if (kn->kind == K_VIEW) { /* same bytes as its operand */
                slot *s = &p->slots[p->slot_of[kn->read[0]]];
                if (lastuse[v] > s->last) s->last = lastuse[v];
                p->slot_of[v] = p->slot_of[kn->read[0]];
                continue;
            }
            int32_t take = -1, donors[4], nd = 0;
            const gnode *pv = &g->nodes[v];
            for (int pass = 0; pass < 2 && take < 0; pass++)
                for (int i = 0; i < kn->nread && take < 0; i++) {
                    if (!kn->inplace_ok[i]) continue;
                    /* The producer's first operand first: in-place ops put their target there. */
                    int first = pv->nin > 0 && pv->in[0] == kn->read[i];
                    if (first != (pass == 0)) continue;
                    int32_t si = p->slot_of[kn->read[i]];
                    slot *s = &p->slots[si];
                    if (s->last != j || s->nbytes != nb) continue;
                    if (kn->kind == K_SCATTER && p->slot_of[kn->read[1]] == si) continue; /* src overlaps base */
                    int taken = 0; /* one output per dying input */
                    for (int w2 = 0; w2 < w; w2++) taken |= p->slot_of[kn->write[w2]] == si;
                    if (taken) continue;
                    if (s->kind != SLOT_PARAM) take = si;
                    else if (nd < 4) donors[nd++] = s->param;
                }
            if (take >= 0) {
                slot *s = &p->slots[take];
                s->last = lastuse[v];
                p->slot_of[v] = take;
                continue;
            }
            slot *s = &p->slots[p->nslots];
            *s = (slot){.kind = SLOT_TEMP, .param = -1, .nbytes = nb, .def = j, .last = lastuse[v] < j ? j : lastuse[v]};
            if (take < 0) { /* run time picks the first donatable one not taken by an earlier slot */
                s->ndonors = (int8_t)nd;
                memcpy(s->donors, donors, (size_t)nd * sizeof *donors);
            }
            p->slot_of[v] = p->nslots++;
        }
    }
    for (int r = 0; r < g->nroots; r++) {
        slot *s = &p->slots[p->slot_of[g->roots[r]]];
        if (s->kind == SLOT_TEMP) s->kind = SLOT_OUT;
    }
    /* Pack temp slots: walk kernels, free blocks after their last use, best fit. */
    {
        int nblk = 0;
        size_t *bsize = core_malloc((size_t)(p->nslots ? p->nslots : 1) * sizeof *bsize);
        int32_t *bfree = core_malloc((size_t)(p->nslots ? p->nslots : 1) * 4);
        int32_t *block_of = core_malloc((size_t)(p->nslots ? p->nslots : 1) * 4);
        if (!bsize || !bfree || !block_of) {
            core_free(bsize);
            core_free(bfree);
            core_free(block_of);
            goto done;
        }
        /* Slots are created in kernel order, so their defs ascend; release
         * in order of death, through a list sorted by `last`. */
        int nt = 0;
        for (int si = 0; si < p->nslots; si++) {
            block_of[si] = -1;
            if (p->slots[si].kind == SLOT_TEMP) bfree[nt++] = si; /* bfree doubles as the list until packing */
        }
        g_sort_slots = p->slots;
        qsort(bfree, (size_t)nt, 4, by_last);
        int32_t *dying = core_malloc((size_t)(nt ? nt : 1) * 4);
        if (!dying) {
            core_free(bsize);
            core_free(bfree);
            core_free(block_of);
            goto done;
        }
        memcpy(dying, bfree, (size_t)nt * 4);
        memset(bfree, 0, (size_t)(p->nslots ? p->nslots : 1) * 4);
        int dnext = 0;
        for (int si = 0; si < p->nslots; si++) {
            slot *s = &p->slots[si];
            if (s->kind != SLOT_TEMP) continue;
            while (dnext < nt && p->slots[dying[dnext]].last < s->def) {
                int32_t o = dying[dnext++];
                if (block_of[o] >= 0) bfree[block_of[o]] = 1;
            }
            int best = -1;
            for (int b = 0; b < nblk; b++)
                if (bfree[b] && bsize[b] >= s->nbytes && (best < 0 || bsize[b] < bsize[best])) best = b;
            if (best < 0)
                for (int b = 0; b < nblk; b++)
                    if (bfree[b] && (best < 0 || bsize[b] > bsize[best])) best = b;
            if (best < 0) {
                best = nblk++;
                bsize[best] = 0;
            }
            if (bsize[best] < s->nbytes) bsize[best] = s->nbytes;
            bfree[best] = 0;
            block_of[si] = best;
        }
        core_free(dying);
        size_t guard = 64, off = 0;
        size_t *boff = core_malloc((size_t)(nblk ? nblk : 1) * sizeof *boff);
        if (!boff) {
            core_free(bsize);
            core_free(bfree);
            core_free(block_of);
            goto done;
        }
        for (int b = 0; b < nblk; b++) {
            bsize[b] = (bsize[b] + 63) & ~(size_t)63;
            boff[b] = off;
            off += bsize[b] + guard; /* room for the debug guard; 64 bytes a block is noise */
        }
        p->arena_bytes = off;
        for (int si = 0; si < p->nslots; si++) {
            if (p->slots[si].kind != SLOT_TEMP) continue;
            p->slots[si].offset = boff[block_of[si]];
            p->slots[si].cap = bsize[block_of[si]];
        }
        core_free(boff);
        core_free(bsize);
        core_free(bfree);
        core_free(block_of);
    }
    rc = 0;
done:
    core_free(lastuse);
    if (rc) cpu_plan_free(p);
    return rc;
}
