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
/* Logits in evaluation mode, without autograd. New handle. */
lt_tensor *net_logits(cli_net *n, lt_tensor *x);
/* Every tensor of a checkpoint: the model's state under its own (PyTorch)
 * names, the optimizer's under "optim.<name>". Borrowed, valid until the
 * next call. Returns the count or -1. */
int net_state(cli_net *n, const char ***names, lt_tensor ***tensors);
/* Restores from named tensors (borrowed) and the step count. 0 or -1. */
int net_restore(cli_net *n, int nt, char **names, lt_tensor **tensors, int64_t step);
const char *net_describe(const cli_net *n); /* "resnet20, 272,474 parameters" */

/* checkpoint.c: one safetensors file, step and model in its metadata. */
int net_save(cli_net *n, const char *model, const char *path, int64_t step);
int net_load(cli_net *n, const char *model, const char *path, int64_t *step);

#endif
