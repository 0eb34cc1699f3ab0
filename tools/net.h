/* The CLI's view of "a model plus its optimizer": trace one training step,
 * compute logits, list and restore the state of a checkpoint. */
#ifndef LT_CLI_NET_H
#define LT_CLI_NET_H

#include "cli.h"

typedef struct cli_net cli_net;

/* NULL with a message on stderr when the model cannot be built. */
cli_net *net_create(const cli_opts *o, int in_ch, int hw, int classes);
void net_free(cli_net *n);
/* Traces forward, loss, backward and the optimizer update with learning
 * rate lr; returns the (pending) loss handle. Nothing syncs here. */
lt_tensor *net_step(cli_net *n, lt_tensor *x, lt_tensor *y, double lr);
/* Before step 1: materializes the model's state with one sync; on several
 * ranks every rank takes rank 0's parameters and buffers first. 0 or -1
 * (error set). */
int net_start(cli_net *n);
/* The training step's loss in evaluation mode, without autograd (a bf16
 * run's under autocast, so not rounded to bfloat16). New handle. */
lt_tensor *net_eval_loss(cli_net *n, lt_tensor *x, lt_tensor *y);
/* Logits in evaluation mode, without autograd. New handle. */
lt_tensor *net_logits(cli_net *n, lt_tensor *x);
/* Every tensor of a checkpoint: the model's state under its own (PyTorch)
 * names, the optimizer's under "optim.<name>". Borrowed, valid until the
 * next call. Returns the count or -1. */
int net_state(cli_net *n, const char ***names, lt_tensor ***tensors);
/* Restores from named tensors (borrowed) and the step count; the
 * optimizer's only when with_optim. 0 or -1. */
int net_restore(cli_net *n, int nt, char **names, lt_tensor **tensors, int64_t step, bool with_optim);
const char *net_describe(const cli_net *n); /* "resnet20, 272,474 parameters" */
double net_optim_state_bytes(const cli_net *n); /* this rank's (--shard-optimizer: its chunks) */

/* checkpoint.c: one safetensors file: model, optimizer, the run's loss and
 * accuracy history; step, model and optimizer in its metadata. net_save
 * writes st's state at step first_step + steps (0 or -1, message printed).
 * net_load restores the net and fills st->first_step and, for train, the
 * history (st->hist, acc); 0, -1 (message printed), or -2 when the file is
 * for another --model or --optimizer (a usage error). */
int net_save(cli_net *n, const cli_opts *o, const char *path, const run_stats *st); /* every rank calls it */
int net_load(cli_net *n, const cli_opts *o, const char *path, run_stats *st);

#endif
