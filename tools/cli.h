/* The command-line program's shared declarations. Included first by every
 * file in tools/ (it sets the POSIX feature macro before any system header). */
#ifndef LT_CLI_H
#define LT_CLI_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "lazytensor.h"
#include "data/data.h"

#define DATA_DIR_DEFAULT DATA_FASHION_DIR

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cli_opts {
    const char *cmd;          /* train | eval | bench */
    const char *model;        /* mlp | resnet20 | resnet18 | resnet50 */
    const char *data;         /* fashion-mnist | fake */
    const char *data_dir;
    int image_size;           /* 0: the dataset's own */
    int64_t batch_size;
    int epochs;
    int64_t steps;            /* 0: whole epochs */
    const char *optimizer;    /* sgd | adam | adamw */
    double lr, weight_decay, momentum;
    const char *lr_schedule;  /* none | step | cosine */
    uint64_t seed;
    int threads;              /* 0: library default */
    bool eager;
    const char *backend;      /* NULL: library default */
    const char *save, *resume, *trace_file, *report, *plot;
    bool metrics, augment;
    bool sync_bn;             /* several processes: batch statistics of the global batch */
    const char *grad_compress; /* several processes: none | bf16 (gradients on the wire) */
    bool shard_optimizer;     /* several processes: ZeRO-1, each rank keeps the optimizer state of 1/N of the parameters */
    int64_t save_every;       /* with save: also checkpoint every N steps (0: at the end only) */
    int64_t test_size;        /* -1: whole test set, 0: no evaluation */
    int64_t eval_batch;
    int64_t log_every;        /* non-terminal progress: a line every N steps */
    bool quiet;               /* no progress or summary (bench runs) */
    const char *precision;    /* fp32 | bf16 (autocast: bf16 convolutions and matmuls, fp32 master weights) */
    /* --data imagefolder (batches.c) */
    int channels;             /* 0: 3 */
    const char *mean, *std;   /* "x" or "x,y,z"; NULL: ImageNet's */
    int workers;              /* decoder threads; -1: the cores */
    int prefetch;             /* batches decoded ahead; 0: 2 */
    int resize;               /* evaluation Resize(short side); -1: size*256/224, 0: none */
    const char *bad_images;   /* skip | fail */
    const char *out, *format; /* export-images */
    /* GPT on text (issue 16): --model gpt --data text, and `sample` */
    int64_t n_layer, n_head, n_embd, block_size, eval_every, tokens;
    const char *data_file, *prompt;
    double temperature;
    int top_k;
} cli_opts;

/* Exit statuses (--help lists them). */
enum cli_exit {
    CLI_OK = 0,
    CLI_FAILED = 1,         /* the run failed */
    CLI_USAGE = 2,          /* bad command line or inputs; nothing was run */
    CLI_SAVE_FAILED = 3,    /* trained, but the checkpoint could not be written */
    CLI_OUTPUT_FAILED = 4,  /* trained and saved, but --plot or --report could not be written */
    CLI_INTERRUPTED = 130   /* SIGINT/SIGTERM: stopped after a step, checkpoint and outputs written */
};

/* options.c */
void opts_defaults(cli_opts *o);
int opts_parse(cli_opts *o, int argc, char **argv); /* 0 ok, 1 help printed, -1 error printed */
void opts_help(FILE *f, const char *cmd);            /* cmd NULL: every option */
int opts_apply_env(const cli_opts *o); /* before the first lazytensor call */

/* outputs.c: every file the run writes (--save, --plot, --trace-file; stdout
 * for --report) checked before anything runs. 0, or -1 with a message. */
int outputs_check(const cli_opts *o);

/* interrupt.c: SIGINT/SIGTERM set a flag that the training loop polls; a
 * second signal exits at once. */
void interrupt_install(void);
bool interrupted(void);

/* timing */
double cli_now(void); /* seconds, monotonic */

/* Everything a run measured: the report, the summary and the plot read it. */
typedef struct run_stats {
    const char *model, *data, *optimizer, *precision;
    int64_t batch, first_step, steps; /* steps run in this process, from first_step */
    int64_t steps_per_epoch;
    double wall_s, data_s, trace_s, mark_s, compile_s, exec_s;
    double *loss;                     /* per step of this run */
    double *hist;                     /* earlier losses from the checkpoint: steps hist_from+1.. */
    int64_t hist_from, nhist;         /* hist_from + nhist == first_step when present */
    double *acc;                      /* test accuracy per evaluation, percent (earlier ones too) */
    int64_t *acc_step;
    int nacc;
    double first_loss, final_loss, test_acc;
    double uncached, cached, peak_bytes;
    bool interrupted;                 /* stopped by SIGINT/SIGTERM */
    int64_t images_skipped, images_decoded; /* image folders */
    int world;                        /* processes (mpirun -np); the global batch is batch * world */
    double comm_exposed_s;            /* time the steps waited on communication */
    double comm_wire_bytes;           /* bytes this rank sent for the steps' collectives (estimate, dist.c) */
    double optim_state_bytes;         /* this rank's optimizer state (--shard-optimizer: its 1/N) */
    bool shard_optimizer;
} run_stats;

/* train.c */
int cmd_train(const cli_opts *o, run_stats *st); /* st may be NULL */
int cmd_eval(const cli_opts *o);
void stats_free(run_stats *st);

double lr_at(const cli_opts *o, int64_t step, int64_t total); /* the --lr-schedule at a step */

/* text.c: GPT on byte-level text. cmd_train_text trains (the caller
 * finishes the run: checkpoint, summary, outputs) and returns a CLI_
 * status; *net is the trained net (free with net_free), even on failure. */
struct cli_net;
lt_gpt_config cli_gpt_config(const cli_opts *o);
int cmd_train_text(const cli_opts *o, run_stats *st, FILE *human, struct cli_net **net);
int cmd_sample(const cli_opts *o);

/* bench.c */
int cmd_bench(const cli_opts *o);
/* bench_data.c: the loader alone (training transforms, no model) */
int cmd_bench_data(const cli_opts *o);
/* export.c */
int cmd_export_images(const cli_opts *o);

/* progress.c */
typedef struct progress {
    FILE *f;
    bool tty;
    int64_t total, every;
    double t_start, t_last;
    int last_len;
} progress;
void progress_init(progress *p, FILE *f, int64_t total, int64_t every);
void progress_update(progress *p, int64_t step, double loss, double img_s, double trace_ms, double exec_ms,
                     double eta_s);
void progress_done(progress *p);
/* Evaluation: batch `b` of p->total done, `images` images so far. */
void progress_eval(progress *p, int64_t b, int64_t images);

/* report.c */
void report_json(FILE *f, const run_stats *st);
void report_table(FILE *f, const run_stats *st);

/* plot_svg.c */
int plot_svg(const char *path, const run_stats *st);

#endif
