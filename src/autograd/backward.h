/* Shared by the backward formulas (backward*.c, bw_*.c). A formula reads
 * f's copied attrs and saved values, computes the gradient of each input
 * that needs one (f->next[i] != NULL) with the public ops, and stores a new
 * handle in gi[i]; the engine sums over broadcast dims and casts (fit), so a
 * formula may return a gradient in the op's broadcast shape. A failed op
 * leaves gi[i] NULL with the error set, which the engine reports. */
#ifndef LT_AG_BACKWARD_H
#define LT_AG_BACKWARD_H

#include "../api/api.h"
#include "autograd.h"

/* Temporaries: K(x) frees x after the current formula; returns x. */
lt_tensor *ag_tmp(lt_tensor *t);
void ag_tmp_free_all(void);
#define K(x) ag_tmp(x)

#define NEED(i) (f->next[(i)] != NULL)
#define SAVED(i) (f->saved[(i)])
#define OUT (f->saved[3])

lt_tensor *ag_zero0(lt_dtype dt); /* a 0-d zero, as a temporary */
lt_tensor *ag_same(lt_tensor *g); /* a new handle on g's value (no node) */
lt_tensor *ag_zeros_like_fn(const ag_fn *in); /* zeros of the value `in` produced */
/* The dtype input i's gradient ends in: its value's, or past a CAST fn the cast's operand's. NEED(i). */
lt_dtype ag_grad_dtype(const ag_fn *f, int i);

int ag_bw_elementwise(ag_fn *f, lt_tensor *g, lt_tensor **gi);
int ag_bw_reduce(ag_fn *f, lt_tensor *g, lt_tensor **gi);   /* SUM MEAN MAX MIN */
int ag_bw_softmax(ag_fn *f, lt_tensor *g, lt_tensor **gi);  /* SOFTMAX LOG_SOFTMAX */
int ag_bw_cumsum(ag_fn *f, lt_tensor *g, lt_tensor **gi);   /* CUMSUM */
int ag_bw_flip(ag_fn *f, lt_tensor *g, lt_tensor **gi);     /* FLIP */
int ag_bw_matmul(ag_fn *f, lt_tensor *g, lt_tensor **gi);
int ag_bw_cat(ag_fn *f, lt_tensor *g, lt_tensor **gi);
int ag_bw_strided(ag_fn *f, lt_tensor *g, lt_tensor **gi);  /* AS_STRIDED */
int ag_bw_scatter(ag_fn *f, lt_tensor *g, lt_tensor **gi);  /* AS_STRIDED_SCATTER */
int ag_bw_nn(ag_fn *f, lt_tensor *g, lt_tensor **gi);       /* the NN ops (bw_nn.c) */
int ag_bw_transformer(ag_fn *f, lt_tensor *g, lt_tensor **gi); /* ERF GELU LAYER_NORM ATTENTION */

#endif
