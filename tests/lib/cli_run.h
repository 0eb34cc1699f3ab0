/* Running the `lazytensor` program from a test: the binary is $LT_CLI (set
 * by CMake) or ./lazytensor; output is captured; JSON reports are read with
 * a few flat lookups. */
#ifndef LT_CLI_RUN_H
#define LT_CLI_RUN_H

#include <stdbool.h>
#include <stddef.h>

/* The program's path, and a fresh scratch directory (removed by
 * cli_cleanup). Returns 0, or -1 with a message when the program is missing. */
int cli_setup(const char *argv1, const char *test_name);
void cli_cleanup(void);
extern const char *cli_path;
extern char cli_tmp[128];

/* Runs `lazytensor <args>` through the shell, capturing stdout (and stderr
 * when both) into out. Returns the exit status, or -1 if it did not exit. */
int cli_run(char *out, size_t cap, bool both, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The number after "key": in a flat JSON object; NAN for null or missing. */
double cli_jnum(const char *js, const char *key);
/* The "losses" array into out (at most max); its length, or -1. */
int cli_jlosses(const char *js, double *out, int max);
/* The whole of a file as a NUL-terminated malloc'd string (NULL if unreadable). */
char *cli_slurp(const char *path, size_t *len);

/* An image folder for `--data imagefolder`: DIR/{train,val}/class{0,1}/
 * {0..per_class-1}.png, RGB size x size, byte k of image i of class c being
 * pixel(c, i, k). 0, or -1 with a message on stderr. */
int cli_png_folder(const char *dir, int per_class, int size, unsigned char (*pixel)(int c, int i, size_t k));

#endif
