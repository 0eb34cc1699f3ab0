/* Handle scopes (lt_scope_begin / lt_scope_end), an autorelease pool for
 * handles: while a scope is open, every new handle is recorded in one stack
 * of slots; ending the scope frees the handles recorded since its begin that
 * are still alive, except those kept with lt_scope_keep, which move to the
 * enclosing scope (or to no scope at all: the caller owns them again).
 *
 * A handle knows its slot (t->scope = index + 1), so lt_free of a scoped
 * handle clears the slot in O(1), and a kept handle is its slot's pointer
 * with the low bit set. Handles the library keeps for itself (a model's
 * parameters, an optimizer's state, autograd's saved values and .grad) are
 * taken out of the scope where they are created (func_unscope). With no
 * scope open, creating a handle costs one predictable branch. */
#include "func.h"

static uintptr_t *slots; /* lt_tensor pointers; bit 0: kept */
static uint32_t nslots, cap;
static uint32_t *marks;  /* marks[d]: first slot of the scope at depth d */
static int mark_cap;
int g_scope_depth;
static int lost; /* begins whose mark could not be stored (OOM): their ends are no-ops */

static lt_tensor *untag(uintptr_t p) { return (lt_tensor *)(p & ~(uintptr_t)1); }

/* Drops the empty slots (freed handles), keeping every scope's range. */
static void compact(void) {
    uint32_t w = 0;
    int d = 0;
    for (uint32_t i = 0; i < nslots; i++) {
        while (d < g_scope_depth && marks[d] == i) marks[d++] = w;
        if (!slots[i]) continue;
        slots[w] = slots[i];
        untag(slots[i])->scope = w + 1;
        w++;
    }
    while (d < g_scope_depth) marks[d++] = w;
    nslots = w;
}

void func_scope_add(lt_tensor *t) {
    if (nslots == cap) {
        compact();
        if (2 * nslots >= cap) { /* half or more live: grow */
            uint32_t c = cap ? cap * 2 : 256;
            uintptr_t *s = core_realloc(slots, c * sizeof *s);
            if (!s) return; /* out of memory: t stays unscoped, the caller's to free */
            slots = s;
            cap = c;
        }
    }
    slots[nslots++] = (uintptr_t)t;
    t->scope = nslots;
}

void func_scope_forget(lt_tensor *t) {
    slots[t->scope - 1] = 0;
    t->scope = 0;
}

int func_scope_begin(void) {
    if (g_scope_depth == mark_cap) {
        int c = mark_cap ? mark_cap * 2 : 16;
        uint32_t *m = core_realloc(marks, (size_t)c * sizeof *m);
        if (!m) {
            lost++;
            return -1;
        }
        marks = m;
        mark_cap = c;
    }
    marks[g_scope_depth++] = nslots;
    return 0;
}

int func_scope_end(void) {
    if (lost) {
        lost--;
        return 0;
    }
    if (!g_scope_depth) return -1;
    uint32_t m = marks[--g_scope_depth], w = m;
    int freed = 0;
    for (uint32_t i = m; i < nslots; i++) {
        uintptr_t p = slots[i];
        if (!p) continue;
        lt_tensor *t = untag(p);
        if (p & 1) { /* kept: now the enclosing scope's, or nobody's */
            t->scope = 0;
            if (g_scope_depth) {
                slots[w] = (uintptr_t)t;
                t->scope = ++w;
            }
        } else {
            t->scope = 0;
            func_free(t);
            freed++;
        }
    }
    nslots = g_scope_depth ? w : 0;
    return freed;
}

void func_scope_keep(lt_tensor *t) {
    if (t->scope && g_scope_depth && t->scope - 1 >= marks[g_scope_depth - 1]) slots[t->scope - 1] |= 1;
}
