/* Text form of a node: "%id = OP dtype[shape](operands) ia=[..] sc=[..]". */
#include "ir.h"

void ir_print_node(FILE *f, const ir_node *n) {
    fprintf(f, "%%%d = %s %s%s", n->idx, g_ops[n->op].name, dtype_name((lt_dtype)n->dtype),
            SHAPE_STR(n->ndim, n->shape));
    fprintf(f, "(");
    for (int i = 0; i < n->nin; i++) fprintf(f, i ? ", %%%d" : "%%%d", n->in[i]->idx);
    fprintf(f, ")");
    if (n->nia) {
        fprintf(f, " ia=[");
        for (int i = 0; i < n->nia; i++) fprintf(f, i ? ", %lld" : "%lld", (long long)n->ia[i]);
        fprintf(f, "]");
    }
    for (int i = 0; i < n->nsc; i++)
        fprintf(f, " s%d=%s%.17g", i, (n->rt >> i) & 1 ? "$" : "", n->sc[i]);
    fprintf(f, "\n");
}
